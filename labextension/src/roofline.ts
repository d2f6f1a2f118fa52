/**
 * The roofline of profiled regions (the dashboard's `roofline` field): on log-log axes of
 * arithmetic intensity (flops per byte) and achieved GFLOP/s, the machine's measured roofs
 * (a bandwidth roof is the line GFLOP/s = intensity x GB/s, capped by the peak) and one point
 * per region, sized by its share of its call and coloured by what bounds it. A point's record
 * is its tooltip; a click selects its variant in the panel.
 */
import { logTicks } from './format';
import { IRoofline, IRooflinePoint, Roof } from './protocol';
import { svgEl, svgRoot } from './svg';

const WIDTH = 680;
const HEIGHT = 320;
const LEFT = 64;
const RIGHT = 16;
const TOP = 12;
const BOTTOM = 44;

interface ILogScale {
  lo: number;
  hi: number;
  map: (v: number) => number;
  ticks: number[];
}

function logScale(lo: number, hi: number, a: number, b: number): ILogScale {
  const ticks = logTicks(lo, hi);
  const l0 = Math.log10(ticks[0]);
  const l1 = Math.log10(ticks[ticks.length - 1]);
  const span = l1 > l0 ? l1 - l0 : 1;
  return {
    lo: ticks[0],
    hi: ticks[ticks.length - 1],
    ticks,
    map: v => a + ((Math.log10(Math.max(v, ticks[0])) - l0) / span) * (b - a)
  };
}

function usable(p: IRooflinePoint): boolean {
  return (
    typeof p?.intensity === 'number' &&
    typeof p?.gflops === 'number' &&
    p.intensity > 0 &&
    p.gflops > 0 &&
    isFinite(p.intensity) &&
    isFinite(p.gflops)
  );
}

function roofs(list: Roof[] | undefined): Roof[] {
  return (Array.isArray(list) ? list : []).filter(
    r => Array.isArray(r) && typeof r[1] === 'number' && r[1] > 0
  );
}

/** The points' tooltip: the region's record. */
export function pointTip(p: IRooflinePoint): string[] {
  const lines = [
    `${p.function ?? '?'} variant ${p.variant ?? '?'}, region ${p.region ?? '?'} (${p.label ?? ''})`,
    `${Number(p.gflops).toPrecision(3)} GFLOP/s at ${Number(p.intensity).toPrecision(3)} flops/byte`
  ];
  if (typeof p.share === 'number') {
    lines.push(`${(p.share * 100).toFixed(1)}% of its call`);
  }
  if (p.verdict) {
    lines.push(p.verdict);
  }
  return lines;
}

export function rooflineChart(data: IRoofline): SVGSVGElement {
  const points = (data.points ?? []).filter(usable);
  const memory = roofs(data.roofs?.memory);
  const peak = roofs(data.roofs?.peak);
  const top = Math.max(
    ...peak.map(r => r[1]),
    ...points.map(p => p.gflops!),
    1
  );
  const xs = points.map(p => p.intensity!);
  const x = logScale(
    Math.min(...xs, 0.1) / 2,
    Math.max(...xs, 10) * 2,
    LEFT,
    WIDTH - RIGHT
  );
  const y = logScale(
    Math.max(Math.min(...points.map(p => p.gflops!), top) / 10, 1e-3),
    top * 2,
    HEIGHT - BOTTOM,
    TOP
  );
  const svg = svgRoot(HEIGHT, WIDTH);
  svg.classList.add('jp-JitDashboard-roofline');
  for (const t of x.ticks) {
    svg.append(
      svgEl('line', {
        x1: x.map(t),
        x2: x.map(t),
        y1: TOP,
        y2: HEIGHT - BOTTOM,
        class: 'jp-JitDashboard-grid'
      }),
      svgEl(
        'text',
        {
          x: x.map(t),
          y: HEIGHT - BOTTOM + 15,
          'text-anchor': 'middle',
          class: 'jp-JitDashboard-axis'
        },
        String(Number(t.toPrecision(2)))
      )
    );
  }
  for (const t of y.ticks) {
    svg.append(
      svgEl('line', {
        x1: LEFT,
        x2: WIDTH - RIGHT,
        y1: y.map(t),
        y2: y.map(t),
        class: 'jp-JitDashboard-grid'
      }),
      svgEl(
        'text',
        {
          x: LEFT - 6,
          y: y.map(t) + 4,
          'text-anchor': 'end',
          class: 'jp-JitDashboard-axis'
        },
        String(Number(t.toPrecision(2)))
      )
    );
  }
  svg.append(
    svgEl(
      'text',
      {
        x: (LEFT + WIDTH - RIGHT) / 2,
        y: HEIGHT - 8,
        'text-anchor': 'middle',
        class: 'jp-JitDashboard-axis jp-JitDashboard-axisTitle'
      },
      'arithmetic intensity (flops per byte, log scale)'
    ),
    svgEl(
      'text',
      {
        x: 12,
        y: (TOP + HEIGHT - BOTTOM) / 2,
        transform: `rotate(-90 12 ${(TOP + HEIGHT - BOTTOM) / 2})`,
        'text-anchor': 'middle',
        class: 'jp-JitDashboard-axis jp-JitDashboard-axisTitle'
      },
      'GFLOP/s (log)'
    )
  );
  const ceiling = Math.max(...peak.map(r => r[1]), top);
  // labels along the roofs at staggered positions: roofs of nearly equal value (one thread and
  // all of them, on a loaded machine) do not print over each other
  memory.forEach(([name, gbs, dashed], k) => {
    // GFLOP/s = intensity x GB/s until the peak
    const knee = Math.min(x.hi, ceiling / gbs);
    const x0 = Math.max(x.lo, y.lo / gbs);
    if (knee <= x0) {
      return;
    }
    const at = x0 * Math.pow(knee / x0, 0.08 + 0.22 * (k % 4));
    svg.append(
      svgEl('line', {
        x1: x.map(x0),
        y1: y.map(x0 * gbs),
        x2: x.map(knee),
        y2: y.map(knee * gbs),
        class: `jp-JitDashboard-roof${dashed ? ' jp-mod-dashed' : ''}`,
        'data-roof': name
      }),
      svgEl(
        'text',
        {
          x: x.map(at) + 4,
          y: y.map(at * gbs) - 4,
          class: 'jp-JitDashboard-roofLabel'
        },
        name
      )
    );
  });
  peak.forEach(([name, gflops, dashed], k) => {
    svg.append(
      svgEl('line', {
        x1: LEFT,
        x2: WIDTH - RIGHT,
        y1: y.map(gflops),
        y2: y.map(gflops),
        class: `jp-JitDashboard-roof jp-mod-peak${dashed ? ' jp-mod-dashed' : ''}`,
        'data-roof': name
      }),
      svgEl(
        'text',
        {
          x: WIDTH - RIGHT - 4 - 230 * k,
          y: y.map(gflops) - 4,
          'text-anchor': 'end',
          class: 'jp-JitDashboard-roofLabel'
        },
        name
      )
    );
  });
  for (const p of points) {
    const share =
      typeof p.share === 'number' ? Math.min(1, Math.max(0, p.share)) : 0;
    svg.append(
      svgEl('circle', {
        cx: x.map(p.intensity!),
        cy: y.map(p.gflops!),
        r: 4 + 10 * Math.sqrt(share),
        class: 'jp-JitDashboard-point',
        'data-bound': String(p.bound ?? ''),
        'data-name': String(p.function ?? ''),
        'data-fid': typeof p.fid === 'number' ? String(p.fid) : '',
        'data-variant': String(p.variant ?? ''),
        'data-tip': pointTip(p).join('\n')
      }),
      svgEl(
        'text',
        {
          x: x.map(p.intensity!) + 8,
          y: y.map(p.gflops!) - 6,
          class: 'jp-JitDashboard-pointLabel'
        },
        String(p.label ?? '')
      )
    );
  }
  return svg;
}
