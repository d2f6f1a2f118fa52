/**
 * The dashboard view of `application/vnd.jitmagic.dashboard+json`: two plain
 * SVG charts (compile time per variant, and the event timeline) whose marks
 * show their variant and reason on hover. Any field may be missing.
 */
import { eventLine, ms, reasonText, statics } from './format';
import { IDashboard, IJitEvent, IVariantInfo } from './protocol';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 640;
const LABEL = 200; // left gutter for labels
const ROW = 22;

interface IBar {
  label: string;
  value: number;
  tip: string[];
}

/** Fill `node` with the dashboard for `data`; returns the number of marks drawn. */
export function renderDashboard(node: HTMLElement, data: IDashboard | null | undefined): number {
  node.replaceChildren();
  node.classList.add('jp-JitDashboard');
  const d: IDashboard = data && typeof data === 'object' ? data : {};
  const bars = variantBars(d);
  const events = (Array.isArray(d.events) ? d.events : []).filter(
    e => e && typeof e === 'object'
  );
  const tooltip = div('jp-JitDashboard-tooltip');
  tooltip.hidden = true;

  let marks = 0;
  node.append(div('jp-JitDashboard-title', 'Compile time per variant'));
  if (bars.length) {
    node.append(barChart(bars));
    marks += bars.length;
  } else {
    node.append(div('jp-JitDashboard-empty', 'No compiled variants.'));
  }
  node.append(div('jp-JitDashboard-title', 'Events over time'));
  if (events.length) {
    node.append(timeline(events), legend(events));
    marks += events.length;
  } else {
    node.append(div('jp-JitDashboard-empty', 'No events.'));
  }
  node.append(tooltip);

  const show = (ev: MouseEvent) => {
    const mark = (ev.target as Element).closest?.('[data-tip]') as Element | null;
    if (!mark) {
      tooltip.hidden = true;
      return;
    }
    tooltip.replaceChildren(
      ...(mark.getAttribute('data-tip') ?? '').split('\n').map(line => div('', line))
    );
    tooltip.hidden = false;
    const box = node.getBoundingClientRect();
    const x = ev.clientX - box.left;
    // flip to the left of the pointer when the tooltip would leave the output
    const flip = x + 12 + tooltip.offsetWidth > node.clientWidth;
    tooltip.style.left = `${Math.max(0, flip ? x - 12 - tooltip.offsetWidth : x + 12)}px`;
    tooltip.style.top = `${ev.clientY - box.top + 12}px`;
  };
  node.addEventListener('mousemove', show);
  node.addEventListener('mouseleave', () => (tooltip.hidden = true));
  return marks;
}

export function variantBars(d: IDashboard): IBar[] {
  const out: IBar[] = [];
  for (const f of Array.isArray(d.functions) ? d.functions : []) {
    if (!f || typeof f !== 'object') {
      continue;
    }
    const jit = f.backend && f.backend !== 'jitmagic' ? ` [${f.backend}]` : '';
    const name = (f.qualname || f.name || '?') + jit;
    for (const v of Array.isArray(f.variants) ? f.variants : []) {
      if (!v || typeof v !== 'object') {
        continue;
      }
      out.push({
        label: `${name} #${v.variant ?? '?'} ${statics(v.statics)}`.trim(),
        value: finite(v.compile_ms),
        tip: variantTip(name, v)
      });
    }
  }
  return out;
}

function variantTip(name: string, v: IVariantInfo): string[] {
  return [
    `${name} · variant ${v.variant ?? '?'}`,
    `static: ${statics(v.statics) || '–'}`,
    `signature: ${v.signature || '–'}`,
    `compile: ${ms(v.compile_ms)} · calls: ${v.calls ?? '–'} · run mean: ${ms(v.run_ms_mean)}`,
    `reason: ${v.last_reason || 'first compile'}`
  ];
}

export function eventTip(e: IJitEvent): string[] {
  const lines = [
    `${e.kind ?? 'event'} · ${e.qualname || e.function || '?'} · variant ${e.variant ?? '–'}`,
    `static: ${statics(e.statics) || '–'}`
  ];
  for (const r of Array.isArray(e.reasons) ? e.reasons : []) {
    lines.push(`reason: ${reasonText(r)}`);
  }
  if (e.timings_ms && typeof e.timings_ms === 'object' && 'total' in e.timings_ms) {
    lines.push(`total: ${ms(e.timings_ms.total)}`);
  }
  lines.push(eventLine(e));
  return lines;
}

function barChart(bars: IBar[]): SVGSVGElement {
  const height = bars.length * ROW + 8;
  const svg = svgRoot(height);
  const max = Math.max(...bars.map(b => b.value), 1e-9);
  const span = WIDTH - LABEL - 70;
  bars.forEach((b, i) => {
    const y = 4 + i * ROW;
    svg.append(
      svgEl('text', { x: LABEL - 6, y: y + ROW / 2 + 4, 'text-anchor': 'end', class: 'jp-JitDashboard-label' }, clip(b.label, 32)),
      svgEl('rect', {
        x: LABEL,
        y: y + 3,
        width: Math.max(1, (b.value / max) * span),
        height: ROW - 6,
        class: 'jp-JitDashboard-bar',
        'data-tip': b.tip.join('\n')
      }),
      svgEl('text', { x: LABEL + (b.value / max) * span + 6, y: y + ROW / 2 + 4, class: 'jp-JitDashboard-value' }, ms(b.value))
    );
  });
  return svg;
}

function timeline(events: IJitEvent[]): SVGSVGElement {
  const names = Array.from(new Set(events.map(e => e.qualname || e.function || '?')));
  const height = names.length * ROW + 30;
  const svg = svgRoot(height);
  const times = events.map((e, i) => (typeof e.time === 'number' ? e.time : i));
  const t0 = Math.min(...times);
  const t1 = Math.max(...times);
  const span = WIDTH - LABEL - 20;
  const x = (t: number) => LABEL + (t1 > t0 ? ((t - t0) / (t1 - t0)) * span : span / 2);
  names.forEach((n, i) => {
    const y = 4 + i * ROW + ROW / 2;
    svg.append(
      svgEl('text', { x: LABEL - 6, y: y + 4, 'text-anchor': 'end', class: 'jp-JitDashboard-label' }, clip(n, 32)),
      svgEl('line', { x1: LABEL, x2: LABEL + span, y1: y, y2: y, class: 'jp-JitDashboard-lane' })
    );
  });
  events.forEach((e, i) => {
    const lane = names.indexOf(e.qualname || e.function || '?');
    svg.append(
      svgEl('circle', {
        cx: x(times[i]),
        cy: 4 + lane * ROW + ROW / 2,
        r: 6,
        class: 'jp-JitDashboard-mark',
        'data-kind': String(e.kind ?? ''),
        'data-tip': eventTip(e).join('\n')
      })
    );
  });
  const axisY = names.length * ROW + 20;
  svg.append(
    svgEl('text', { x: LABEL, y: axisY, class: 'jp-JitDashboard-axis' }, '0 s'),
    svgEl('text', { x: LABEL + span, y: axisY, 'text-anchor': 'end', class: 'jp-JitDashboard-axis' }, `${(t1 - t0).toFixed(2)} s`)
  );
  return svg;
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
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${WIDTH} ${height}`);
  svg.setAttribute('width', '100%');
  svg.setAttribute('class', 'jp-JitDashboard-chart');
  svg.style.maxWidth = `${WIDTH}px`;
  return svg;
}

function svgEl(tag: string, attrs: { [k: string]: string | number }, text?: string): SVGElement {
  const node = document.createElementNS(SVG, tag);
  for (const k of Object.keys(attrs)) {
    node.setAttribute(k, String(attrs[k]));
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  if (attrs['data-tip']) {
    node.setAttribute('role', 'img'); // screen readers get what the hover shows
    node.setAttribute('aria-label', String(attrs['data-tip']));
  }
  return node;
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

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

function finite(v: unknown): number {
  return typeof v === 'number' && isFinite(v) && v > 0 ? v : 0;
}
