/**
 * The dashboard view of `application/vnd.jitmagic.dashboard+json`: plain SVG charts of what the
 * PNG shows, interactive. Compile vs run time per variant, calls made vs break-even, speedup over
 * NumPy, the session's cumulative compile vs run time (storms marked) and the event timeline.
 * Every mark carries its record as a tooltip; a click on a variant's mark selects it in the panel.
 * Axes switch to a log scale when values span more than two decades. Any field may be missing.
 */
import { extraFacts, feedLine, workerLabel } from './events';
import {
  clipMiddle,
  count,
  figuresHow,
  figuresText,
  logTicks,
  ms,
  niceTicks,
  plural,
  reasonText,
  statics,
  tierName,
  variantLabel
} from './format';
import { functionKey } from './model';
import { IDashboard, IFunctionInfo, IJitEvent, IVariantInfo } from './protocol';
import { registry } from './registry';
import { rooflineChart } from './roofline';
import { SVG, svgEl, svgRoot as chartRoot } from './svg';

const WIDTH = 680;
const LABEL = 190; // left gutter for labels
const RIGHT = 110; // right gutter for values
const ROW = 22;
const AXIS = 40;
/** what the left gutter holds at the chart's 11 px font */
const LABEL_CHARS = 30;

export interface IVariantMark {
  key: string;
  fid?: number;
  name: string;
  /** at most LABEL_CHARS, the variant number always whole */
  label: string;
  /** the whole label, shown on hover when `label` had to shorten it */
  full: string;
  v: IVariantInfo;
  tip: string[];
}

interface IScale {
  map: (v: number) => number;
  ticks: number[];
  log: boolean;
}

/** Fill `node` with the dashboard for `data`; returns the number of marks drawn. */
export function renderDashboard(
  node: HTMLElement,
  data: IDashboard | null | undefined,
  state: { filter?: string; note?: string } = {}
): number {
  node.replaceChildren();
  node.classList.add('jp-JitDashboard');
  const d: IDashboard = data && typeof data === 'object' ? data : {};
  const all = variantMarks(d);
  const events = (Array.isArray(d.events) ? d.events : []).filter(
    e => e && typeof e === 'object'
  );
  const names = Array.from(
    new Set(
      all
        .map(b => b.name)
        .concat(events.map(e => e.qualname || e.function || '?'))
    )
  );
  const filter =
    state.filter && names.includes(state.filter) ? state.filter : '';
  const marks = filter ? all.filter(b => b.name === filter) : all;
  const evs = filter
    ? events.filter(e => (e.qualname || e.function || '?') === filter)
    : events;
  const tooltip = div('jp-JitDashboard-tooltip');
  tooltip.hidden = true;
  tooltip.setAttribute('role', 'tooltip');

  if (state.note) {
    node.append(div('jp-JitDashboard-note', state.note));
  }
  if (names.length > 1) {
    const bar = div('jp-JitDashboard-controls');
    const sel = document.createElement('select');
    sel.className = 'jp-JitDashboard-filter jp-mod-styled';
    sel.setAttribute('aria-label', 'Show one function');
    for (const n of ['', ...names]) {
      const o = document.createElement('option');
      o.value = n;
      o.textContent = n || 'all functions';
      o.selected = n === filter;
      sel.append(o);
    }
    sel.addEventListener('change', () => {
      state.filter = sel.value;
      renderDashboard(node, data, state);
    });
    bar.append(sel);
    node.append(bar);
  }

  let drawn = 0;
  const section = (
    title: string,
    chart: SVGSVGElement | null,
    empty: string
  ) => {
    node.append(div('jp-JitDashboard-title', title));
    node.append(chart ?? div('jp-JitDashboard-empty', empty));
  };
  section(
    'Compile vs run time per variant',
    marks.length ? compileVsRun(marks) : null,
    'No compiled variants.'
  );
  drawn += marks.length;
  section(
    'Calls made vs break-even calls',
    marks.length ? callsVsBreakEven(marks) : null,
    'No compiled variants.'
  );
  const sped = marks.filter(b => positive(b.v.speedup));
  section(
    'Speedup over NumPy',
    sped.length ? speedups(sped) : null,
    'No eager NumPy baseline measured yet.'
  );
  const session = sessionChart(evs, filter ? [] : samplesOf(d));
  section(
    'Session: cumulative compile vs run time',
    session,
    'No compiles yet.'
  );
  section('Events over time', evs.length ? timeline(evs) : null, 'No events.');
  if (evs.length) {
    node.append(legend(evs));
    drawn += evs.length;
  }
  const points = (d.roofline?.points ?? []).filter(
    p => !filter || p?.function === filter
  );
  if (d.roofline) {
    section(
      "Roofline: profiled regions under this machine's measured roofs",
      points.length ? rooflineChart({ ...d.roofline, points }) : null,
      'No profiled region with floating-point work (%jit_profile f(x)).'
    );
    drawn += points.length;
  }
  node.append(tooltip);

  const show = (ev: MouseEvent) => {
    const mark = (ev.target as Element).closest?.(
      '[data-tip]'
    ) as Element | null;
    if (!mark) {
      tooltip.hidden = true;
      return;
    }
    tooltip.replaceChildren(
      ...(mark.getAttribute('data-tip') ?? '')
        .split('\n')
        .map(line => div('', line))
    );
    tooltip.hidden = false;
    const box = node.getBoundingClientRect();
    const x = ev.clientX - box.left;
    // flip to the left of the pointer when the tooltip would leave the output
    const flip = x + 12 + tooltip.offsetWidth > node.clientWidth;
    tooltip.style.left = `${Math.max(0, flip ? x - 12 - tooltip.offsetWidth : x + 12)}px`;
    tooltip.style.top = `${ev.clientY - box.top + 12}px`;
  };
  node.onmousemove = show;
  node.onmouseleave = () => (tooltip.hidden = true);
  node.onclick = ev => {
    const mark = (ev.target as Element).closest?.(
      '[data-variant]'
    ) as Element | null;
    const name = mark?.getAttribute('data-name');
    if (!mark || !name) {
      return;
    }
    const fid = mark.getAttribute('data-fid');
    const variant = mark.getAttribute('data-variant');
    registry.selectVariant?.({
      fid: fid ? Number(fid) : undefined,
      name,
      variant: variant ? Number(variant) : null
    });
  };
  return drawn;
}

/** One entry per variant of every function, with its tooltip (record, reason, phases). */
export function variantMarks(d: IDashboard): IVariantMark[] {
  const phases = new Map<string, { [p: string]: number }>();
  for (const e of Array.isArray(d.events) ? d.events : []) {
    if (
      e &&
      typeof e === 'object' &&
      (e.kind === 'compile' || e.kind === 'miss') &&
      e.timings_ms
    ) {
      phases.set(`${functionKey(e)}:${e.variant}`, e.timings_ms);
    }
  }
  const out: IVariantMark[] = [];
  for (const f of Array.isArray(d.functions) ? d.functions : []) {
    if (!f || typeof f !== 'object') {
      continue;
    }
    const name = f.qualname || f.name || '?';
    const key = functionKey(f as IFunctionInfo);
    const jit = f.backend && f.backend !== 'jitmagic' ? ` [${f.backend}]` : '';
    for (const v of Array.isArray(f.variants) ? f.variants : []) {
      if (!v || typeof v !== 'object') {
        continue;
      }
      out.push({
        key,
        fid: f.fid,
        name,
        label: variantLabel(`${name}${jit}`, v.variant, statics(v.statics)),
        full: `${name}${jit} #${v.variant ?? '?'} ${statics(v.statics)}`.trim(),
        v,
        tip: variantTip(name, v, phases.get(`${key}:${v.variant}`))
      });
    }
  }
  return out;
}

function variantTip(
  name: string,
  v: IVariantInfo,
  phases?: { [p: string]: number }
): string[] {
  const lines = [
    `${name} · variant ${v.variant ?? '?'}${v.backend && v.backend !== 'jitmagic' ? ` (${v.backend})` : ''}`,
    `static: ${statics(v.statics) || '–'}`,
    `signature: ${v.signature || '–'}`,
    `compile: ${ms(v.compile_ms)} · calls: ${typeof v.calls === 'number' ? count(v.calls) : '–'} · run: ${ms(v.run_ms_total)} total, ${ms(v.run_ms_mean)} mean`
  ];
  if (v.speedup_text) {
    lines.push(figuresText(v), ...figuresHow(v));
  } else if (positive(v.speedup)) {
    const be =
      typeof v.break_even_calls === 'number'
        ? `break-even after ${plural(v.break_even_calls, 'call')}`
        : 'never pays off';
    lines.push(
      `speedup over NumPy: ${(v.speedup as number).toFixed(2)}x · ${be}`
    );
  }
  if (v.provenance) {
    lines.push(`measured: ${v.provenance}`);
  }
  if (phases) {
    lines.push(
      'phases: ' +
        Object.keys(phases)
          .filter(p => p !== 'total')
          .map(p => `${p} ${ms(phases[p])}`)
          .join(', ')
    );
  }
  const tier = tierName(v.tier);
  if (tier) {
    lines.push(`tier: ${tier}`);
  }
  lines.push(`reason: ${v.last_reason || 'first compile'}`);
  return lines;
}

export function eventTip(e: IJitEvent): string[] {
  const lines = [
    `${e.kind ?? 'event'} · ${e.qualname || e.function || '?'} · variant ${e.variant ?? '–'}`,
    `static: ${statics(e.statics) || '–'}`
  ];
  for (const r of Array.isArray(e.reasons) ? e.reasons : []) {
    lines.push(`reason: ${reasonText(r)}`);
  }
  if (
    e.timings_ms &&
    typeof e.timings_ms === 'object' &&
    'total' in e.timings_ms
  ) {
    lines.push(`total: ${ms(e.timings_ms.total)}`);
  }
  // what a tier change measured (run_us), a worker, or any field of a newer kind of record
  for (const [k, v] of extraFacts(e)) {
    lines.push(`${k}: ${v}`);
  }
  const worker = workerLabel(e);
  if (worker) {
    lines.push(`from ${worker}`);
  }
  lines.push(feedLine(e));
  return lines;
}

/** A linear scale from 0, or a log scale when the positive values span over two decades. */
export function scaleFor(
  values: number[],
  x0: number,
  x1: number,
  allowLog = true
): IScale {
  const pos = values.filter(positive);
  const hi = Math.max(...pos, 1e-12);
  const lo = Math.min(...pos, hi);
  if (allowLog && pos.length > 1 && hi / lo > 100) {
    const ticks = logTicks(lo, hi);
    const a = Math.log10(ticks[0]);
    const b = Math.log10(ticks[ticks.length - 1]);
    const span = b > a ? b - a : 1;
    return {
      log: true,
      ticks,
      map: v =>
        x0 + ((Math.log10(Math.max(v, ticks[0])) - a) / span) * (x1 - x0)
    };
  }
  const ticks = niceTicks(0, hi, 4);
  const top = Math.max(ticks[ticks.length - 1] ?? hi, hi);
  return {
    log: false,
    ticks,
    map: v => x0 + (Math.max(0, v) / top) * (x1 - x0)
  };
}

function compileVsRun(marks: IVariantMark[]): SVGSVGElement {
  const rowH = ROW * 1.6;
  const svg = svgRoot(marks.length * rowH + AXIS + 8);
  const values = ([] as number[]).concat(
    ...marks.map(b => [finite(b.v.compile_ms), finite(b.v.run_ms_total)])
  );
  const s = scaleFor(values, LABEL, WIDTH - RIGHT);
  marks.forEach((b, i) => {
    const y = 4 + i * rowH;
    const h = (rowH - 8) / 2;
    svg.append(rowLabel(b.label, y + rowH / 2, b.full));
    for (const [series, value, dy] of [
      ['compile', finite(b.v.compile_ms), 0],
      ['run', finite(b.v.run_ms_total), h]
    ] as [string, number, number][]) {
      const x1 = value > 0 ? s.map(value) : LABEL;
      svg.append(
        svgEl('rect', {
          x: LABEL,
          y: y + 3 + dy,
          width: Math.max(1, x1 - LABEL),
          height: h - 1,
          class: `jp-JitDashboard-bar jp-JitDashboard-${series}`,
          'data-series': series,
          ...variantData(b)
        }),
        svgEl(
          'text',
          { x: x1 + 4, y: y + 3 + dy + h - 3, class: 'jp-JitDashboard-value' },
          `${series} ${ms(value)}`
        )
      );
    }
  });
  axis(svg, s, marks.length * rowH + 6, v => ms(v), 'time');
  return svg;
}

function callsVsBreakEven(marks: IVariantMark[]): SVGSVGElement {
  const svg = svgRoot(marks.length * ROW + AXIS + 8);
  const values = ([] as number[]).concat(
    ...marks.map(b => [finite(b.v.calls), finite(b.v.break_even_calls)])
  );
  const s = scaleFor(values, LABEL, WIDTH - RIGHT - 40);
  marks.forEach((b, i) => {
    const y = 4 + i * ROW;
    const calls = finite(b.v.calls);
    const be =
      typeof b.v.break_even_calls === 'number' ? b.v.break_even_calls : null;
    svg.append(rowLabel(b.label, y + ROW / 2, b.full));
    svg.append(
      svgEl('rect', {
        x: LABEL,
        y: y + 4,
        width: Math.max(1, (calls > 0 ? s.map(calls) : LABEL) - LABEL),
        height: ROW - 8,
        class: 'jp-JitDashboard-calls',
        ...variantData(b)
      })
    );
    let verdict: string;
    if (be !== null) {
      const x = s.map(Math.max(be, 1e-12));
      svg.append(
        svgEl('line', {
          x1: x,
          x2: x,
          y1: y + 1,
          y2: y + ROW - 1,
          class: 'jp-JitDashboard-breakeven',
          ...variantData(b)
        })
      );
      verdict =
        calls >= be
          ? `paid off (${count(calls)} ≥ ${count(be)})`
          : `${count(calls)} of ${count(be)}`;
    } else {
      verdict = positive(b.v.speedup) ? 'never pays off' : 'break-even unknown';
    }
    svg.append(
      svgEl(
        'text',
        {
          x: WIDTH - RIGHT - 36,
          y: y + ROW / 2 + 4,
          class: 'jp-JitDashboard-value'
        },
        verdict
      )
    );
  });
  // calls are whole numbers: no 0.5 tick on a short linear axis
  axis(
    svg,
    s.log ? s : { ...s, ticks: s.ticks.filter(t => Number.isInteger(t)) },
    marks.length * ROW + 6,
    v => count(v),
    'calls'
  );
  return svg;
}

function speedups(marks: IVariantMark[]): SVGSVGElement {
  const svg = svgRoot(marks.length * ROW + AXIS + 8);
  const values = marks.map(b => b.v.speedup as number).concat([1]);
  const s = scaleFor(values, LABEL, WIDTH - RIGHT);
  marks.forEach((b, i) => {
    const y = 4 + i * ROW;
    const sp = b.v.speedup as number;
    const x = s.map(sp);
    svg.append(
      rowLabel(b.label, y + ROW / 2, b.full),
      svgEl('rect', {
        x: LABEL,
        y: y + 4,
        width: Math.max(1, x - LABEL),
        height: ROW - 8,
        class: `jp-JitDashboard-speedup${sp < 1 ? ' jp-mod-slower' : ''}`,
        ...variantData(b)
      }),
      svgEl(
        'text',
        { x: x + 4, y: y + ROW / 2 + 4, class: 'jp-JitDashboard-value' },
        `${sp.toFixed(sp >= 10 ? 0 : 2)}x`
      )
    );
  });
  const one = s.map(1);
  svg.append(
    svgEl('line', {
      x1: one,
      x2: one,
      y1: 0,
      y2: marks.length * ROW + 6,
      class: 'jp-JitDashboard-ref'
    })
  );
  axis(
    svg,
    s,
    marks.length * ROW + 6,
    v => `${v}x`,
    'eager NumPy time / jitted call time'
  );
  return svg;
}

function samplesOf(d: IDashboard): [number, number][] {
  return (Array.isArray(d.samples) ? d.samples : []).filter(
    p =>
      Array.isArray(p) && typeof p[0] === 'number' && typeof p[1] === 'number'
  );
}

/** Cumulative compile ms (from compile events) and run ms (from samples) against time. */
export function sessionSeries(
  events: IJitEvent[],
  samples: [number, number][]
) {
  const compiles = events
    .filter(
      e =>
        (e.kind === 'compile' || e.kind === 'miss') &&
        typeof e.time === 'number'
    )
    .sort((a, b) => (a.time as number) - (b.time as number));
  let acc = 0;
  const compile: [number, number][] = compiles.map(e => [
    e.time as number,
    (acc += finite(e.timings_ms?.total))
  ]);
  const storms = events.filter(
    e => e.kind === 'storm' && typeof e.time === 'number'
  );
  return { compile, run: samples.slice(), storms };
}

function sessionChart(
  events: IJitEvent[],
  samples: [number, number][]
): SVGSVGElement | null {
  const { compile, run, storms } = sessionSeries(events, samples);
  if (!compile.length) {
    return null;
  }
  const H = 150;
  const svg = svgRoot(H + AXIS + 16);
  const times = compile
    .map(p => p[0])
    .concat(
      run.map(p => p[0]),
      storms.map(e => e.time as number)
    );
  const t0 = Math.min(...times);
  const t1 = Math.max(...times, t0 + 1e-3);
  const tx = niceTicks(0, t1 - t0, 5);
  const tTop = Math.max(tx[tx.length - 1] ?? 1, t1 - t0);
  const X = (t: number) => LABEL + ((t - t0) / tTop) * (WIDTH - RIGHT - LABEL);
  const top = Math.max(...compile.map(p => p[1]), ...run.map(p => p[1]), 1e-9);
  const ty = niceTicks(0, top, 4);
  const yTop = Math.max(ty[ty.length - 1] ?? top, top);
  const Y = (v: number) => 4 + H - (v / yTop) * H;
  for (const t of ty) {
    svg.append(
      svgEl('line', {
        x1: LABEL,
        x2: WIDTH - RIGHT,
        y1: Y(t),
        y2: Y(t),
        class: 'jp-JitDashboard-grid'
      }),
      svgEl(
        'text',
        {
          x: LABEL - 6,
          y: Y(t) + 4,
          'text-anchor': 'end',
          class: 'jp-JitDashboard-axis'
        },
        ms(t)
      )
    );
  }
  const step = (pts: [number, number][]) => {
    let path = `M ${X(t0)} ${Y(0)}`;
    for (const [t, v] of pts) {
      path += ` H ${X(t)} V ${Y(v)}`;
    }
    return path + ` H ${X(t0 + tTop)}`;
  };
  svg.append(
    svgEl('path', {
      d: step(compile),
      class: 'jp-JitDashboard-line jp-JitDashboard-compileLine'
    })
  );
  if (run.length) {
    svg.append(
      svgEl('path', {
        d: step(run),
        class: 'jp-JitDashboard-line jp-JitDashboard-runLine'
      })
    );
  }
  for (const e of storms) {
    const x = X(e.time as number);
    svg.append(
      svgEl('line', {
        x1: x,
        x2: x,
        y1: 4,
        y2: 4 + H,
        class: 'jp-JitDashboard-stormLine'
      }),
      svgEl('circle', {
        cx: x,
        cy: 10,
        r: 5,
        class: 'jp-JitDashboard-mark',
        'data-kind': 'storm',
        'data-tip': eventTip(e).join('\n')
      })
    );
  }
  const lc = compile[compile.length - 1][1];
  const lr = run.length ? run[run.length - 1][1] : 0;
  svg.append(
    svgEl(
      'text',
      {
        x: WIDTH - RIGHT + 4,
        y: Y(lc) + 4,
        class: 'jp-JitDashboard-value jp-JitDashboard-compileText'
      },
      `compile ${ms(lc)}`
    ),
    svgEl(
      'text',
      {
        x: WIDTH - RIGHT + 4,
        y: Y(lr) + (Math.abs(Y(lr) - Y(lc)) < 12 ? 16 : 4),
        class: 'jp-JitDashboard-value jp-JitDashboard-runText'
      },
      `run ${ms(lr)}`
    )
  );
  timeAxis(svg, tx, X, t0, H + 10);
  return svg;
}

function timeline(events: IJitEvent[]): SVGSVGElement {
  const names = Array.from(
    new Set(events.map(e => e.qualname || e.function || '?'))
  );
  const svg = svgRoot(names.length * ROW + AXIS + 8);
  const times = events.map((e, i) => (typeof e.time === 'number' ? e.time : i));
  const t0 = Math.min(...times);
  const t1 = Math.max(...times, t0 + 1e-3);
  const tx = niceTicks(0, t1 - t0, 5);
  const tTop = Math.max(tx[tx.length - 1] ?? 1, t1 - t0);
  const span = WIDTH - RIGHT - LABEL;
  const X = (t: number) => LABEL + ((t - t0) / tTop) * span;
  names.forEach((n, i) => {
    const y = 4 + i * ROW + ROW / 2;
    svg.append(
      rowLabel(n, y),
      svgEl('line', {
        x1: LABEL,
        x2: LABEL + span,
        y1: y,
        y2: y,
        class: 'jp-JitDashboard-lane'
      })
    );
  });
  // events of one cell land at nearly one time: step each along its lane so none hides another
  const lastX = new Map<number, number>();
  events.forEach((e, i) => {
    const lane = names.indexOf(e.qualname || e.function || '?');
    let x = X(times[i]);
    const prev = lastX.get(lane);
    if (prev !== undefined && x < prev + 9) {
      x = prev + 9;
    }
    lastX.set(lane, x);
    svg.append(
      svgEl('circle', {
        cx: x,
        cy: 4 + lane * ROW + ROW / 2,
        r: 4,
        class: 'jp-JitDashboard-mark',
        'data-kind': String(e.kind ?? ''),
        'data-tip': eventTip(e).join('\n')
      })
    );
  });
  timeAxis(svg, tx, X, t0, names.length * ROW + 6);
  return svg;
}

/** Tick marks and labels along the bottom; a label that would collide with the last is left out. */
function axis(
  svg: SVGSVGElement,
  s: IScale,
  y: number,
  fmt: (v: number) => string,
  title: string
): void {
  svg.append(
    svgEl('line', {
      x1: LABEL,
      x2: WIDTH - RIGHT,
      y1: y,
      y2: y,
      class: 'jp-JitDashboard-axisLine'
    })
  );
  let last = -Infinity;
  for (const t of s.ticks) {
    const x = s.map(t);
    if (x < LABEL - 1 || x > WIDTH - 1) {
      continue;
    }
    svg.append(
      svgEl('line', {
        x1: x,
        x2: x,
        y1: y,
        y2: y + 4,
        class: 'jp-JitDashboard-axisLine'
      })
    );
    if (x - last >= 48) {
      svg.append(
        svgEl(
          'text',
          {
            x,
            y: y + 15,
            'text-anchor': 'middle',
            class: 'jp-JitDashboard-axis'
          },
          fmt(t)
        )
      );
      last = x;
    }
  }
  svg.append(
    svgEl(
      'text',
      {
        x: (LABEL + WIDTH - RIGHT) / 2,
        y: y + 30,
        'text-anchor': 'middle',
        class: 'jp-JitDashboard-axis jp-JitDashboard-axisTitle'
      },
      s.log ? `${title} (log scale)` : title
    )
  );
}

function timeAxis(
  svg: SVGSVGElement,
  ticks: number[],
  X: (t: number) => number,
  t0: number,
  y: number
): void {
  axis(
    svg,
    { ticks: ticks.map(t => t0 + t), map: X, log: false },
    y,
    t => `${Number((t - t0).toPrecision(3))} s`,
    'session time'
  );
}

function variantData(b: IVariantMark): { [k: string]: string } {
  return {
    'data-name': b.name,
    'data-fid': b.fid === undefined ? '' : String(b.fid),
    'data-variant': String(b.v.variant ?? ''),
    'data-tip': b.tip.join('\n')
  };
}

function rowLabel(text: string, y: number, full = text): SVGElement {
  const t = svgEl(
    'text',
    {
      x: LABEL - 6,
      y: y + 4,
      'text-anchor': 'end',
      class: 'jp-JitDashboard-label'
    },
    clipMiddle(text, LABEL_CHARS)
  );
  if (full !== clipMiddle(text, LABEL_CHARS)) {
    const title = document.createElementNS(SVG, 'title');
    title.textContent = full;
    t.append(title);
  }
  return t;
}

function legend(events: IJitEvent[]): HTMLElement {
  const box = div('jp-JitDashboard-legend');
  const kinds = Array.from(new Set(events.map(e => String(e.kind ?? ''))));
  for (const k of kinds) {
    const item = div('jp-JitDashboard-legendItem');
    const swatch = document.createElement('span');
    swatch.className = 'jp-JitDashboard-swatch';
    swatch.dataset.kind = k;
    item.append(swatch, document.createTextNode(k || '?'));
    box.append(item);
  }
  return box;
}

function svgRoot(height: number): SVGSVGElement {
  return chartRoot(height, WIDTH);
}

function div(cls: string, text?: string): HTMLDivElement {
  const node = document.createElement('div');
  if (cls) {
    node.className = cls;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function positive(v: unknown): boolean {
  return typeof v === 'number' && isFinite(v) && v > 0;
}

function finite(v: unknown): number {
  return typeof v === 'number' && isFinite(v) && v > 0 ? v : 0;
}
