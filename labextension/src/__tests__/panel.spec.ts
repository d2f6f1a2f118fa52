import { Widget } from '@lumino/widgets';

import { JitModel } from '../model';
import { JitPanel } from '../panel';
import { JitStatus } from '../status';
import { missEvent, snapshot } from './fixtures';

const frame = () => new Promise(r => requestAnimationFrame(() => r(null)));

describe('JitPanel', () => {
  it('lists functions, variants and events, and opens an event on click', async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    await frame();
    expect(panel.node.textContent).toContain('Open a notebook with a running kernel.');
    model.setState('waiting');
    await frame();
    expect(panel.node.textContent).toContain('Run %load_ext jitmagic.');

    model.handle({ type: 'snapshot', snapshot });
    model.handle({ type: 'event', event: missEvent });
    await frame();
    const fn = panel.node.querySelector(".jp-JitPanel-function[data-name='scale']")!;
    expect(fn.querySelectorAll('.jp-JitPanel-variant').length).toBe(2);
    expect(fn.textContent).toContain("static argument 'n' changed: 2 -> 3");
    const calls = Array.from(fn.querySelectorAll("[data-stat='calls']")).map(c => c.textContent);
    expect(calls).toEqual(['1 call', '2 calls']);
    const figs = Array.from(fn.querySelectorAll("[data-stat='figures']")) as HTMLElement[];
    expect(figs.map(f => f.textContent)).toEqual([
      'speedup – · break-even –',
      'speedup 0.23x · break-even never'
    ]);
    expect(figs[1].title).toContain('call: 5.20 µs (median of 15 batches of 19, warm)');
    expect(figs[1].title).toContain('NumPy: 1.2 µs (median of 15 batches of 57, warm)');

    const ev = panel.node.querySelector(".jp-JitPanel-event[data-kind='miss']") as HTMLElement;
    ev.click();
    const details = panel.node.querySelector('.jp-JitPanel-details')!;
    expect(details.textContent).toContain('static_value');
    expect(details.textContent).toContain('codegen');
    (panel.node.querySelector(".jp-JitPanel-event[data-kind='miss']") as HTMLElement).click();
    expect(panel.node.querySelector('.jp-JitPanel-details')).toBeNull();
    panel.dispose();
  });

  it('asks for a refresh', async () => {
    const panel = new JitPanel();
    const refresh = jest.fn();
    panel.onRefresh = refresh;
    (panel.node.querySelector("[data-action='refresh']") as HTMLElement).click();
    expect(refresh).toHaveBeenCalled();
    panel.dispose();
  });
});

describe('JitStatus', () => {
  it('shows the counts and appears only while jitmagic is loaded', () => {
    const click = jest.fn();
    const status = new JitStatus(click);
    const model = new JitModel();
    let toggles = 0;
    status.activeStateChanged.connect(() => toggles++);
    status.model = model;
    expect(status.isActiveItem).toBe(false);
    model.handle({ type: 'snapshot', snapshot });
    expect(status.node.textContent).toBe('JIT 2 compiles · 1 miss');
    expect(status.isActiveItem).toBe(true);
    expect(toggles).toBe(1);
    status.node.click();
    expect(click).toHaveBeenCalled();
  });
});
