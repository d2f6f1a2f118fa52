import { boundTag, duration, percent, renderProfile } from '../profile';
import { pointTip, rooflineChart } from '../roofline';
import { profile, roofline } from './fixtures';

describe('renderProfile', () => {
  it('says it is profiling, or why it could not', () => {
    expect(renderProfile({}).textContent).toContain('profiling…');
    const failed = renderProfile({ error: 'could not profile: LookupError' });
    expect(failed.classList.contains('jp-mod-error')).toBe(true);
    expect(failed.textContent).toBe('could not profile: LookupError');
  });

  it('shades each line of the source by its share and says what bounds it', () => {
    const box = renderProfile({ profile });
    const rows = Array.from(
      box.querySelectorAll('.jp-JitProfile-line')
    ) as HTMLElement[];
    expect(
      rows.map(r => r.querySelector('.jp-JitProfile-code')!.textContent)
    ).toEqual(profile.source);
    expect(rows.map(r => r.dataset.line)).toEqual(['2', '3', '4', '5', '6']);
    const def = rows[0];
    expect(def.classList.contains('jp-mod-costly')).toBe(false);
    expect(def.tabIndex).toBe(-1);
    expect(def.style.getPropertyValue('--jp-jit-share')).toBe('0%');
    const five = rows[3];
    expect(five.querySelector('.jp-JitProfile-share')!.textContent).toBe('49%');
    expect(five.style.getPropertyValue('--jp-jit-share')).toBe('49%');
    expect(five.querySelector('.jp-JitProfile-bound')!.textContent).toBe(
      'memory 48%'
    );
    expect(five.dataset.bound).toBe('memory');
    expect(five.title).toContain('region [2] line 5');
    expect(five.tabIndex).toBe(0);
    expect(five.getAttribute('aria-expanded')).toBe('false');
    expect(rows[4].querySelector('.jp-JitProfile-bound')!.textContent).toBe(
      'serial'
    );
    expect(box.textContent).toContain(profile.summary!);
    expect(box.textContent).toContain('note: the call had no variant');
    expect(box.textContent).toContain('roofs (znver5');
  });

  it("opens a line: its regions' figures, and the lines fused with it", () => {
    const box = renderProfile({ profile, open: new Set([3]) });
    const row = box.querySelector(
      ".jp-JitProfile-line[data-line='3']"
    ) as HTMLElement;
    expect(row.getAttribute('aria-expanded')).toBe('true');
    const details = row.nextElementSibling as HTMLElement;
    expect(details.classList.contains('jp-JitProfile-lineDetails')).toBe(true);
    expect(details.textContent).toContain('fused loop nest: mul, add');
    expect(details.textContent).toContain('memory-bound: 77%');
    expect(details.textContent).toContain('fused with line 4');
    expect(details.textContent).toContain('83.7 GB/s');
    // the time shows once, in the region's head
    expect(details.textContent).not.toContain('(30.4% of the call)');
  });

  it("lists every region, the call's own first", () => {
    const box = renderProfile({ profile });
    const labels = Array.from(
      box.querySelectorAll('.jp-JitProfile-regions .jp-JitProfile-regionLabel')
    ).map(n => n.textContent);
    expect(labels).toEqual([
      'dispatch',
      'allocation',
      '[1] lines 3, 4',
      '[2] line 5'
    ]);
    expect(box.textContent).toContain('via helper.py:3 in helper');
  });

  it('survives a profile with fields missing', () => {
    const box = renderProfile({ profile: { function: 'f' } });
    expect(box.textContent).toContain("the function's source is not available");
  });

  it('formats shares, times and bounds', () => {
    expect(percent(0.4873)).toBe('49%');
    expect(percent(0.012)).toBe('1.2%');
    expect(percent(0)).toBe('');
    expect(duration(0.3777)).toBe('378 ns');
    expect(duration(28.68)).toBe('28.7 µs');
    expect(duration(14681)).toBe('14.7 ms');
    expect(duration(undefined)).toBe('–');
    expect(boundTag({ bound: 'compute', of_roof: 0.74 })).toBe('compute 74%');
    expect(boundTag({ bound: 'overhead', of_roof: 0.74 })).toBe('overhead');
    expect(boundTag({})).toBe('');
  });
});

describe('rooflineChart', () => {
  it('draws every roof and a point per region with its record', () => {
    const svg = rooflineChart(roofline);
    const roofs = svg.querySelectorAll('.jp-JitDashboard-roof');
    expect(roofs.length).toBe(6);
    expect(
      svg.querySelectorAll('.jp-JitDashboard-roof.jp-mod-peak').length
    ).toBe(2);
    const points = Array.from(
      svg.querySelectorAll('.jp-JitDashboard-point')
    ) as SVGElement[];
    expect(points.map(p => p.getAttribute('data-bound'))).toEqual([
      'memory',
      'compute'
    ]);
    expect(points[0].getAttribute('data-tip')).toContain('10.5 GFLOP/s');
    expect(points[0].getAttribute('data-variant')).toBe('1');
    expect(points[0].getAttribute('data-fid')).toBe('1');
    // higher intensity to the right, more GFLOP/s higher up
    const cx = points.map(p => Number(p.getAttribute('cx')));
    const cy = points.map(p => Number(p.getAttribute('cy')));
    expect(cx[1]).toBeGreaterThan(cx[0]);
    expect(cy[1]).toBeLessThan(cy[0]);
    // a bigger share, a bigger point
    expect(Number(points[1].getAttribute('r'))).toBeGreaterThan(
      Number(points[0].getAttribute('r'))
    );
  });

  it('leaves out what it cannot place', () => {
    const svg = rooflineChart({
      roofs: { memory: [['x', -1, false]] as any, peak: [] },
      points: [{ intensity: 0, gflops: 3 }, { intensity: 1 } as any]
    });
    expect(svg.querySelectorAll('.jp-JitDashboard-point').length).toBe(0);
    expect(svg.querySelectorAll('.jp-JitDashboard-roof').length).toBe(0);
  });

  it("a point's tooltip is its region's record", () => {
    expect(pointTip(roofline.points![1])).toEqual([
      'other variant 1, region 1 (other L2)',
      '60.2 GFLOP/s at 12.5 flops/byte',
      '90.0% of its call',
      'compute-bound: 74% of measured peak FMA throughput'
    ]);
  });
});
