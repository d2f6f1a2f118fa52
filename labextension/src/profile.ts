/**
 * A profile of one call, drawn from the kernel's data (jitmagic.diagnostics.profile_views
 * .panel_data; no HTML crosses the comm): the function's source with each line shaded by its
 * share of the call and tagged with what bounds it, the figures of its regions on hover and
 * on Enter or click, then every region (the call's own overhead first) and the notes.
 */
import { IProfile, IProfileLine, IProfileRegion } from './protocol';

/** The panel's state of one variant's profile: loading, failed, or drawn. */
export interface IProfileState {
  profile?: IProfile;
  error?: string;
  /** source lines opened to show their regions' figures */
  open?: Set<number>;
}

const SHORT_BOUND: { [b: string]: string } = {
  memory: 'memory',
  compute: 'compute',
  overhead: 'overhead',
  'serial dependence': 'serial',
  latency: 'latency',
  neither: 'neither'
};

export function percent(share: number | undefined | null): string {
  if (typeof share !== 'number' || !isFinite(share) || share <= 0) {
    return '';
  }
  return share >= 0.1
    ? `${(share * 100).toFixed(0)}%`
    : `${(share * 100).toFixed(1)}%`;
}

/** µs at 3 figures, in the unit that reads best. */
export function duration(us: number | undefined | null): string {
  if (typeof us !== 'number' || !isFinite(us)) {
    return '–';
  }
  if (us >= 1e6) {
    return `${(us / 1e6).toPrecision(3)} s`;
  }
  if (us >= 1e3) {
    return `${(us / 1e3).toPrecision(3)} ms`;
  }
  if (us >= 1) {
    return `${us.toPrecision(3)} µs`;
  }
  return `${(us * 1e3).toPrecision(3)} ns`;
}

/** The tag after a line: `memory 62%`, `compute 45%`, `serial`, ... */
export function boundTag(l: IProfileLine): string {
  const b = String(l.bound ?? '');
  if (!b) {
    return '';
  }
  const short = SHORT_BOUND[b] ?? b;
  const roofed =
    (b === 'memory' || b === 'compute') &&
    typeof l.of_roof === 'number' &&
    isFinite(l.of_roof);
  return roofed ? `${short} ${(Number(l.of_roof) * 100).toFixed(0)}%` : short;
}

/** Draw a profile (or its loading / error state) into a new element. */
export function renderProfile(state: IProfileState): HTMLElement {
  const box = el('div', 'jp-JitProfile');
  if (state.error) {
    box.classList.add('jp-mod-error');
    box.append(el('div', 'jp-JitProfile-error', state.error));
    return box;
  }
  const p = state.profile;
  if (!p) {
    box.append(
      el(
        'div',
        'jp-JitProfile-loading',
        'profiling… (the kernel times the call and its instrumented twin in turns)'
      )
    );
    return box;
  }
  box.append(el('div', 'jp-JitProfile-summary', p.summary ?? ''));
  const head = el('div', 'jp-JitProfile-head', p.head ?? '');
  box.append(head);
  box.append(listing(p, state.open ?? new Set<number>()));
  const regions = Array.isArray(p.regions) ? p.regions : [];
  if (regions.length) {
    const details = el('details', 'jp-JitProfile-regions');
    details.append(
      el('summary', '', `regions (${regions.length}): figures and verdicts`)
    );
    for (const r of regions) {
      details.append(regionNode(r));
    }
    box.append(details);
  }
  for (const n of Array.isArray(p.notes) ? p.notes : []) {
    box.append(el('div', 'jp-JitProfile-note', `note: ${n}`));
  }
  if (p.roofs) {
    box.append(el('div', 'jp-JitProfile-roofs', p.roofs));
  }
  return box;
}

function listing(p: IProfile, open: Set<number>): HTMLElement {
  const source = Array.isArray(p.source) ? p.source : [];
  const start = typeof p.source_start === 'number' ? p.source_start : 1;
  const byLine = new Map<number, IProfileLine>();
  for (const l of Array.isArray(p.lines) ? p.lines : []) {
    if (typeof l?.line === 'number') {
      byLine.set(l.line, l);
    }
  }
  const regions = new Map<number, IProfileRegion>();
  for (const r of Array.isArray(p.regions) ? p.regions : []) {
    if (typeof r?.index === 'number') {
      regions.set(r.index, r);
    }
  }
  const list = el('div', 'jp-JitProfile-source');
  list.setAttribute('role', 'list');
  list.setAttribute(
    'aria-label',
    `${p.function ?? 'function'}: each line's share of the call`
  );
  if (!source.length) {
    list.append(
      el('div', 'jp-JitProfile-empty', "the function's source is not available")
    );
  }
  source.forEach((text, i) => {
    const n = start + i;
    const info = byLine.get(n);
    const row = el('div', 'jp-JitProfile-line');
    row.setAttribute('role', 'listitem');
    row.dataset.line = String(n);
    const share = info?.share ?? 0;
    row.style.setProperty(
      '--jp-jit-share',
      `${Math.round(Math.min(1, Math.max(0, share)) * 100)}%`
    );
    if (info) {
      row.classList.add('jp-mod-costly');
      row.dataset.bound = String(info.bound ?? '');
      row.tabIndex = 0;
      row.dataset.action = 'profile-line';
      row.title = info.tip ?? '';
      row.setAttribute('aria-expanded', String(open.has(n)));
    }
    row.append(
      el('span', 'jp-JitProfile-share', percent(share)),
      el('span', 'jp-JitProfile-lineNo', String(n)),
      el('span', 'jp-JitProfile-code', text || ' ')
    );
    if (info) {
      const tag = el('span', 'jp-JitProfile-bound', boundTag(info));
      tag.title = info.roof ?? '';
      row.append(tag);
    }
    list.append(row);
    if (info && open.has(n)) {
      const more = el('div', 'jp-JitProfile-lineDetails');
      for (const k of info.regions ?? []) {
        const r = regions.get(k);
        if (r) {
          more.append(regionNode(r, n));
        }
      }
      list.append(more);
    }
  });
  return list;
}

function regionNode(r: IProfileRegion, line?: number): HTMLElement {
  const node = el('div', 'jp-JitProfile-region');
  node.dataset.region = String(r.index ?? '');
  node.dataset.bound = String(r.bound ?? '');
  const title = el('div', 'jp-JitProfile-regionHead');
  title.append(
    el('span', 'jp-JitProfile-regionLabel', r.label ?? ''),
    el('span', 'jp-JitProfile-regionName', r.name ?? ''),
    el(
      'span',
      'jp-JitProfile-regionTime',
      `${duration(r.time_us)} · ${percent(r.share) || '0%'}`
    )
  );
  node.append(title);
  if (r.verdict) {
    node.append(el('div', 'jp-JitProfile-verdict', r.verdict));
  }
  const facts = (r.facts ?? []).slice(1); // the first is the time, shown above
  if (facts.length) {
    node.append(el('div', 'jp-JitProfile-facts', facts.join(' · ')));
  }
  const others = (r.lines ?? []).filter(n => n !== line);
  if (line !== undefined && others.length) {
    node.append(
      el(
        'div',
        'jp-JitProfile-fused',
        `fused with line${others.length > 1 ? 's' : ''} ${others.join(', ')}`
      )
    );
  }
  if (r.via && r.via.length) {
    node.append(el('div', 'jp-JitProfile-via', `via ${r.via.join('; ')}`));
  }
  return node;
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  cls = '',
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (cls) {
    node.className = cls;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}
