import { renderDashboard, variantBars } from '../dashboard';
import { compileEvent, missEvent, snapshot } from './fixtures';

describe('renderDashboard', () => {
  it('draws one bar per variant and one mark per event', () => {
    const node = document.createElement('div');
    const marks = renderDashboard(node, { functions: snapshot.functions, events: [compileEvent, missEvent] });
    expect(marks).toBe(4);
    expect(node.querySelectorAll('.jp-JitDashboard-bar').length).toBe(2);
    const dots = node.querySelectorAll('.jp-JitDashboard-mark');
    expect(Array.from(dots).map(d => d.getAttribute('data-kind'))).toEqual(['compile', 'miss']);
    expect(node.querySelector('.jp-JitDashboard-legend')!.textContent).toBe('compilemiss');
  });

  it('shows the variant and the reason on hover', () => {
    const node = document.createElement('div');
    document.body.append(node);
    renderDashboard(node, { functions: snapshot.functions, events: [compileEvent, missEvent] });
    const tooltip = node.querySelector('.jp-JitDashboard-tooltip') as HTMLElement;
    expect(tooltip.hidden).toBe(true);
    const miss = node.querySelector(".jp-JitDashboard-mark[data-kind='miss']")!;
    miss.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: 10, clientY: 10 }));
    expect(tooltip.hidden).toBe(false);
    expect(tooltip.textContent).toContain('variant 2');
    expect(tooltip.textContent).toContain("static argument 'n' changed: 2 -> 3");
    const bar = node.querySelectorAll('.jp-JitDashboard-bar')[1];
    bar.dispatchEvent(new MouseEvent('mousemove', { bubbles: true }));
    expect(tooltip.textContent).toContain('scale · variant 2');
    expect(tooltip.textContent).toContain('static: n=3');
    node.dispatchEvent(new MouseEvent('mouseleave'));
    expect(tooltip.hidden).toBe(true);
    node.remove();
  });

  it('is robust to missing and malformed fields', () => {
    const node = document.createElement('div');
    for (const data of [null, undefined, {}, { functions: 'x', events: 3 }, { functions: [null, { variants: [null, {}] }], events: [null, {}] }]) {
      expect(() => renderDashboard(node, data as any)).not.toThrow();
    }
    expect(node.querySelectorAll('.jp-JitDashboard-bar').length).toBe(1);
    expect(node.querySelectorAll('.jp-JitDashboard-mark').length).toBe(1);
    renderDashboard(node, {});
    expect(node.textContent).toContain('No compiled variants.');
    expect(node.textContent).toContain('No events.');
  });

  it('labels bars with function, variant and static values', () => {
    expect(variantBars({ functions: snapshot.functions }).map(b => b.label)).toEqual([
      'scale #1 n=2',
      'scale #2 n=3'
    ]);
    const watched = [{ ...snapshot.functions![0], backend: 'jax' }];
    expect(variantBars({ functions: watched })[0].label).toBe('scale [jax] #1 n=2');
  });
});
