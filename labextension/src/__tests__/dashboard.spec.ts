import {
  renderDashboard,
  scaleFor,
  sessionSeries,
  variantMarks
} from '../dashboard';
import { DashboardRenderer } from '../mime';
import { JitModel } from '../model';
import { DASHBOARD_MIME, IDashboard } from '../protocol';
import { registry } from '../registry';
import { compileEvent, missEvent, roofline, snapshot } from './fixtures';

const measured: IDashboard = {
  functions: [
    {
      ...snapshot.functions![0],
      fid: 3,
      variants: [
        {
          ...snapshot.functions![0].variants![0],
          speedup: 0.5,
          break_even_calls: null,
          speedup_text: '0.50x',
          break_even_text: 'never',
          provenance: 'median of 7 warm runs'
        },
        {
          ...snapshot.functions![0].variants![1],
          calls: 4000,
          speedup: 30,
          break_even_calls: 1200,
          speedup_text: '30x',
          break_even_text: '1200'
        }
      ]
    }
  ],
  events: [
    { ...compileEvent, fid: 3 },
    { ...missEvent, fid: 3 },
    { ...missEvent, fid: 3, seq: 3, kind: 'storm', time: 1795322442.0 }
  ],
  samples: [
    [1795322441.55, 0.004],
    [1795322443.0, 12.5]
  ]
};

describe('renderDashboard', () => {
  it('plots compile against run time, calls against break-even, and speedup per variant', () => {
    const node = document.createElement('div');
    renderDashboard(node, measured);
    const bars = node.querySelectorAll('.jp-JitDashboard-bar');
    expect(Array.from(bars).map(b => b.getAttribute('data-series'))).toEqual([
      'compile',
      'run',
      'compile',
      'run'
    ]);
    expect(node.querySelectorAll('.jp-JitDashboard-calls').length).toBe(2);
    // only variant 2 has a break-even; variant 1 is slower than NumPy
    expect(node.querySelectorAll('.jp-JitDashboard-breakeven').length).toBe(1);
    expect(node.textContent).toContain('never pays off');
    expect(node.textContent).toContain('paid off (4k ≥ 1.2k)');
    const speed = node.querySelectorAll('.jp-JitDashboard-speedup');
    expect(speed.length).toBe(2);
    expect(speed[0].classList.contains('jp-mod-slower')).toBe(true);
    // 0.5x to 30x spans under two decades: linear; the axis says which
    expect(node.textContent).toContain('eager NumPy time / jitted call time');
    // the session chart: both cumulative lines and the storm
    expect(node.querySelector('.jp-JitDashboard-compileLine')).not.toBeNull();
    expect(node.querySelector('.jp-JitDashboard-runLine')).not.toBeNull();
    expect(node.querySelectorAll('.jp-JitDashboard-stormLine').length).toBe(1);
    expect(
      node.querySelector('.jp-JitDashboard-compileText')!.textContent
    ).toBe('compile 59.4 ms');
  });

  it('uses a log scale where values span decades, with readable ticks', () => {
    const s = scaleFor([0.004, 40, 2000], 0, 100);
    expect(s.log).toBe(true);
    expect(s.ticks[0]).toBe(0.001);
    expect(s.map(0.001)).toBe(0);
    expect(s.map(10000)).toBe(100);
    expect(scaleFor([1, 50], 0, 100).log).toBe(false);
    const node = document.createElement('div');
    renderDashboard(node, {
      functions: [
        {
          name: 'f',
          variants: [
            { variant: 1, compile_ms: 40, run_ms_total: 0.004, calls: 1 }
          ]
        }
      ]
    });
    const axes = Array.from(node.querySelectorAll('.jp-JitDashboard-axis')).map(
      a => a.textContent
    );
    expect(axes).toContain('time (log scale)');
    expect(axes.filter(a => /µs|ms|s$/.test(a ?? '')).length).toBeGreaterThan(
      3
    );
  });

  it('shows the variant record, reason and phases on hover, and selects it on click', () => {
    const node = document.createElement('div');
    document.body.append(node);
    renderDashboard(node, measured);
    const tooltip = node.querySelector(
      '.jp-JitDashboard-tooltip'
    ) as HTMLElement;
    expect(tooltip.hidden).toBe(true);
    const bar = node.querySelectorAll('.jp-JitDashboard-bar')[2];
    bar.dispatchEvent(
      new MouseEvent('mousemove', { bubbles: true, clientX: 10, clientY: 10 })
    );
    expect(tooltip.hidden).toBe(false);
    expect(tooltip.textContent).toContain('scale · variant 2');
    expect(tooltip.textContent).toContain('static: n=3');
    expect(tooltip.textContent).toContain(
      "reason: static argument 'n' changed: 2 -> 3"
    );
    expect(tooltip.textContent).toContain('phases: trace 330 µs');
    expect(tooltip.textContent).toContain(
      'speedup 30x · break-even 1200 calls'
    );
    expect(tooltip.textContent).toContain(
      'call: 5.20 µs (median of 15 batches of 19, warm)'
    );
    const slow = node.querySelectorAll('.jp-JitDashboard-bar')[0];
    slow.dispatchEvent(new MouseEvent('mousemove', { bubbles: true }));
    expect(tooltip.textContent).toContain('measured: median of 7 warm runs');
    node.dispatchEvent(new MouseEvent('mouseleave'));
    expect(tooltip.hidden).toBe(true);

    const picked: any[] = [];
    registry.selectVariant = ref => picked.push(ref);
    (bar as any).dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(picked).toEqual([{ fid: 3, name: 'scale', variant: 2 }]);
    registry.selectVariant = null;
    node.remove();
  });

  it('draws the roofline of profiled regions, filtered by function, and selects on click', () => {
    const node = document.createElement('div');
    document.body.append(node);
    const state: { filter?: string } = {};
    renderDashboard(node, { ...measured, roofline }, state);
    const titles = Array.from(
      node.querySelectorAll('.jp-JitDashboard-title')
    ).map(t => t.textContent);
    expect(titles[titles.length - 1]).toBe(
      "Roofline: profiled regions under this machine's measured roofs"
    );
    expect(node.querySelectorAll('.jp-JitDashboard-point').length).toBe(2);
    const tooltip = node.querySelector(
      '.jp-JitDashboard-tooltip'
    ) as HTMLElement;
    const point = node.querySelector(
      ".jp-JitDashboard-point[data-bound='memory']"
    )!;
    point.dispatchEvent(new MouseEvent('mousemove', { bubbles: true }));
    expect(tooltip.textContent).toContain('memory-bound: 77%');
    const picked: any[] = [];
    registry.selectVariant = ref => picked.push(ref);
    point.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(picked).toEqual([{ fid: 1, name: 'step', variant: 1 }]);
    registry.selectVariant = null;
    state.filter = 'scale'; // no profiled region of scale: the section says so
    renderDashboard(node, { ...measured, roofline }, state);
    expect(node.querySelectorAll('.jp-JitDashboard-point').length).toBe(0);
    expect(node.textContent).toContain(
      'No profiled region with floating-point work'
    );
    renderDashboard(node, measured);
    expect(node.textContent).not.toContain('Roofline');
    node.remove();
  });

  it('filters by function and keeps events of one moment apart', () => {
    const node = document.createElement('div');
    const other = {
      ...compileEvent,
      seq: 9,
      function: 'other',
      qualname: 'other',
      fid: 9
    };
    const data: IDashboard = {
      functions: [
        ...measured.functions!,
        {
          fid: 9,
          name: 'other',
          qualname: 'other',
          variants: [{ variant: 1, compile_ms: 5 }]
        }
      ],
      events: [...measured.events!, other, { ...other, seq: 10, kind: 'miss' }]
    };
    renderDashboard(node, data);
    const sel = node.querySelector(
      '.jp-JitDashboard-filter'
    ) as HTMLSelectElement;
    expect(Array.from(sel.options).map(o => o.value)).toEqual([
      '',
      'scale',
      'other'
    ]);
    const lane = Array.from(
      node.querySelectorAll(
        '.jp-JitDashboard-chart:last-of-type .jp-JitDashboard-mark'
      )
    );
    const xs = lane.slice(-2).map(m => Number(m.getAttribute('cx')));
    expect(xs[1] - xs[0]).toBeGreaterThanOrEqual(9); // same time, not on top of each other
    sel.value = 'other';
    sel.dispatchEvent(new Event('change'));
    expect(node.querySelectorAll('.jp-JitDashboard-bar').length).toBe(2);
    expect(
      (node.querySelector('.jp-JitDashboard-filter') as HTMLSelectElement).value
    ).toBe('other');
  });

  it('sums compile times into a cumulative series', () => {
    const s = sessionSeries(measured.events!, measured.samples!);
    expect(s.compile.map(p => p[1])).toEqual([41.0, 59.4]);
    expect(s.storms.length).toBe(1);
    expect(s.run.length).toBe(2);
  });

  it('is robust to missing and malformed fields', () => {
    const node = document.createElement('div');
    for (const data of [
      null,
      undefined,
      {},
      { functions: 'x', events: 3, samples: 'no' },
      {
        functions: [null, { variants: [null, {}] }],
        events: [null, {}],
        samples: [[1], null]
      }
    ]) {
      expect(() => renderDashboard(node, data as any)).not.toThrow();
    }
    renderDashboard(node, {});
    expect(node.textContent).toContain('No compiled variants.');
    expect(node.textContent).toContain('No events.');
  });

  it('labels marks with function, variant and static values', () => {
    expect(
      variantMarks({ functions: snapshot.functions }).map(b => b.label)
    ).toEqual(['scale #1 n=2', 'scale #2 n=3']);
    const watched = [{ ...snapshot.functions![0], backend: 'jax' }];
    expect(variantMarks({ functions: watched })[0].label).toBe(
      'scale [jax] #1 n=2'
    );
  });

  it('keeps every variant of a long-named function apart, and counts without exponents', () => {
    const long = 'exponentially_weighted_moving_average';
    const node = document.createElement('div');
    const functions = [
      {
        name: long,
        qualname: long,
        variants: [1, 2, 3].map(v => ({
          variant: v,
          statics: { dt: `0.${v}` },
          calls: 150000,
          break_even_calls: 1300,
          compile_ms: 5,
          run_ms_total: 1
        }))
      }
    ];
    renderDashboard(node, { functions });
    const labels = Array.from(
      node.querySelectorAll('.jp-JitDashboard-label')
    ).map(l => l.firstChild!.textContent!);
    expect(new Set(labels).size).toBe(3);
    labels.forEach(l => expect(l.length).toBeLessThanOrEqual(30));
    expect(labels[0]).toMatch(/^expon.*#1/);
    expect(node.textContent).toContain('paid off (150k ≥ 1.3k)');
    expect(node.textContent).not.toMatch(/\de\+/);
  });
});

describe('live dashboard', () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => r(null)));

  it('follows its kernel model, then stops on restart', async () => {
    const r = new DashboardRenderer(DASHBOARD_MIME);
    const data = { functions: [], events: [], live: true, kernel_id: 'k-1' };
    await r.renderModel({ data: { [DASHBOARD_MIME]: data } } as any);
    expect(r.node.dataset.live).toBe('false');
    const m = new JitModel();
    m.handle({ type: 'hello', kernel_id: 'k-1' } as any);
    registry.setModel('k-1', m);
    expect(r.node.dataset.live).toBe('true');
    expect(r.node.textContent).toContain('live: follows the kernel');
    m.handle({ type: 'event', event: compileEvent });
    await frame();
    expect(r.node.querySelectorAll('.jp-JitDashboard-bar').length).toBe(2);
    m.reset('waiting', 'kernel restarted');
    expect(r.node.dataset.live).toBe('false');
    expect(r.node.textContent).toContain('live updates stopped');
    registry.setModel('k-1', null);
    r.dispose();
  });
});
