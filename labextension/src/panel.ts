/**
 * JitPanel: the "JIT" side panel, a view over the JitModel of the active notebook.
 *
 * The toolbar (search, event-kind filter, clear) is built once so typing keeps focus; the body
 * below it is rebuilt from the model at most once per animation frame. What the user opened
 * (collapsed functions, an event's details, a variant's code) is panel state and survives
 * re-renders. Every control is a button or carries role/tabindex, so Tab and Enter reach it.
 */
import { Widget } from '@lumino/widgets';

import {
  callsText,
  clock,
  figuresHow,
  figuresText,
  eventLine,
  location,
  ms,
  payoffText,
  plural,
  reasonRuns,
  statics,
  statusText
} from './format';
import { functionKey, JitModel } from './model';
import { CodeView, IFunctionInfo, IJitEvent, IVariantInfo } from './protocol';
import { ICodeRequest } from './connection';
import { IVariantRef } from './registry';

const KINDS = [
  'compile', 'miss', 'generalise', 'generalise_failed', 'evict', 'storm', 'error', 'disk_hit', 'disk_miss', 'warning'
];
const VIEWS: [CodeView, string][] = [
  ['ir', 'IR'],
  ['llvm', 'LLVM'],
  ['asm', 'asm']
];

interface ICodeState {
  view: CodeView;
  diffFrom?: number;
  text?: string;
  error?: string;
}

/** One row of the event feed: a single event, or a run of misses of one function. */
export interface IFeedItem {
  events: IJitEvent[];
  key: string;
}

/** Newest first; consecutive misses of one function fold into one expandable row. */
export function feedItems(events: IJitEvent[]): IFeedItem[] {
  const out: IFeedItem[] = [];
  for (const e of events.slice().reverse()) {
    const prev = out[out.length - 1];
    if (
      prev &&
      e.kind === 'miss' &&
      prev.events[0].kind === 'miss' &&
      functionKey(prev.events[0]) === functionKey(e)
    ) {
      prev.events.push(e);
      continue;
    }
    out.push({ events: [e], key: String(e.seq ?? `${out.length}`) });
  }
  return out;
}

export class JitPanel extends Widget {
  constructor() {
    super();
    this.id = 'jitmagic-panel';
    this.addClass('jp-JitPanel');
    this.title.caption = 'JIT: compilations of the active notebook';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'JIT compilations');
    this.node.addEventListener('click', this._onClick);
    this.node.addEventListener('keydown', this._onKey);
    this.node.append(this._buildToolbar(), this._body);
    this._render();
  }

  /** The notebook being shown, e.g. `analysis.ipynb`. */
  set source(label: string) {
    this._sourceNode.textContent = label || 'no notebook';
    this._sourceNode.title = label;
  }

  /** Called when the user asks for fresh numbers. */
  onRefresh: (() => void) | null = null;
  /** Scroll the notebook to the cell of a location (`In[3]:2`). */
  onJump: ((where: string) => void) | null = null;
  /** Fetch a variant's code from the kernel. */
  onCode: ((r: ICodeRequest) => Promise<string>) | null = null;
  /** Drop compiled variants (fid, or all when undefined), after the user confirmed. */
  onClear: ((fid?: number) => void) | null = null;
  /** Ask the user to confirm a destructive action; resolves true to go ahead. */
  confirm: (message: string) => Promise<boolean> = message =>
    Promise.resolve(window.confirm(message));

  get model(): JitModel | null {
    return this._model;
  }

  set model(model: JitModel | null) {
    if (model === this._model) {
      return;
    }
    this._model?.changed.disconnect(this._schedule, this);
    this._model = model;
    this._openEvent = null;
    this._code.clear();
    this._selected = null;
    model?.changed.connect(this._schedule, this);
    this._schedule();
  }

  /** Reveal one variant: expand its function, mark the row, scroll it into view. */
  selectVariant(ref: IVariantRef): void {
    const f = this._model?.functions.find(f =>
      ref.fid !== undefined && f.fid !== undefined ? f.fid === ref.fid : (f.qualname || f.name) === ref.name
    );
    if (!f) {
      return;
    }
    const key = functionKey(f);
    this._collapsed.delete(key);
    this._selected = { key, variant: ref.variant };
    this._render();
    const row = this._body.querySelector('.jp-JitPanel-variant.jp-mod-selected') as HTMLElement | null;
    row?.scrollIntoView?.({ block: 'nearest' });
    row?.focus();
  }

  dispose(): void {
    this._model?.changed.disconnect(this._schedule, this);
    if (this._frame) {
      cancelAnimationFrame(this._frame);
    }
    super.dispose();
  }

  protected onAfterShow(): void {
    this._schedule();
  }

  private _schedule(): void {
    if (this._frame || this.isDisposed) {
      return;
    }
    // many events in one burst (a recompile storm) cost one render
    this._frame = requestAnimationFrame(() => {
      this._frame = 0;
      this._render();
    });
  }

  private _buildToolbar(): HTMLElement {
    const bar = el('div', 'jp-JitPanel-toolbar');
    const header = el('div', 'jp-JitPanel-header');
    header.append(el('span', 'jp-JitPanel-title', 'JIT'), this._sourceNode);
    const refresh = button('Refresh', 'refresh', 'Ask the kernel for fresh call counts and run times');
    const clear = button('Clear cache', 'clear-all', 'Drop every compiled variant (as %jit_cache --clear)');
    header.append(refresh, clear);
    this._sourceNode.className = 'jp-JitPanel-source';
    this._sourceNode.textContent = 'no notebook';

    const filters = el('div', 'jp-JitPanel-filters');
    this._search.type = 'search';
    this._search.className = 'jp-JitPanel-search jp-mod-styled';
    this._search.placeholder = 'Filter functions';
    this._search.setAttribute('aria-label', 'Filter functions and events by name');
    this._search.addEventListener('input', () => this._render());
    this._kind.className = 'jp-JitPanel-kindFilter jp-mod-styled';
    this._kind.setAttribute('aria-label', 'Show events of one kind');
    for (const k of ['', ...KINDS]) {
      const o = document.createElement('option');
      o.value = k;
      o.textContent = k ? `${k} events` : 'all events';
      this._kind.append(o);
    }
    this._kind.addEventListener('change', () => this._render());
    filters.append(this._search, this._kind);
    bar.append(header, filters);
    return bar;
  }

  private _render(): void {
    const m = this._model;
    const root = el('div', 'jp-JitPanel-body');
    if (!m || m.state !== 'connected') {
      const msg =
        !m || m.state === 'no-kernel'
          ? 'Open a notebook with a running kernel.'
          : 'jitmagic is not loaded in this kernel. Run %load_ext jitmagic.';
      root.append(el('div', 'jp-JitPanel-empty', msg));
      if (m?.note) {
        root.append(el('div', 'jp-JitPanel-note', m.note));
      }
      this._replace(root);
      return;
    }
    const counts = el('div', 'jp-JitPanel-counts');
    counts.append(
      count('compiles', 'compile', m.compiles),
      count('misses', 'recompile', m.misses, 'recompiles'),
      count('evictions', 'eviction', m.evictions)
    );
    counts.title = statusText(m.compiles, m.misses);
    root.append(counts);
    if (m.note) {
      root.append(el('div', 'jp-JitPanel-note', m.note));
    }

    const needle = this._search.value.trim().toLowerCase();
    const matches = (name: string) => !needle || name.toLowerCase().includes(needle);
    root.append(el('h3', 'jp-JitPanel-section', 'Functions'));
    const fns = m.functions.filter(f => f && matches(f.qualname || f.name || ''));
    if (!m.functions.length) {
      root.append(el('div', 'jp-JitPanel-empty', 'No jitted function has run yet.'));
    } else if (!fns.length) {
      root.append(el('div', 'jp-JitPanel-empty', `No function matches “${needle}”.`));
    }
    for (const f of fns) {
      root.append(this._renderFunction(f, m.storms.get(functionKey(f)) ?? ''));
    }

    root.append(el('h3', 'jp-JitPanel-section', 'Events'));
    const kind = this._kind.value;
    const events = m.events.filter(
      e => e && (!kind || e.kind === kind) && matches(e.qualname || e.function || '')
    );
    if (!events.length) {
      root.append(el('div', 'jp-JitPanel-empty', m.events.length ? 'No event matches.' : 'No compile events yet.'));
    }
    const feed = el('ol', 'jp-JitPanel-events');
    for (const item of feedItems(events)) {
      feed.append(this._renderFeedItem(item));
    }
    root.append(feed);
    this._replace(root);
  }

  private _renderFunction(f: IFunctionInfo, storm: string): HTMLElement {
    const key = functionKey(f);
    const name = f.qualname || f.name || '?';
    const variants = Array.isArray(f.variants) ? f.variants.filter(Boolean) : [];
    const collapsed = this._collapsed.has(key);
    const box = el('div', 'jp-JitPanel-function');
    box.dataset.name = name;
    box.dataset.key = key;
    const head = el('div', 'jp-JitPanel-functionHead');
    const toggle = button(collapsed ? '▸' : '▾', 'toggle-function', `${collapsed ? 'Expand' : 'Collapse'} ${name}`);
    toggle.classList.add('jp-JitPanel-toggle');
    toggle.setAttribute('aria-expanded', String(!collapsed));
    const nameNode = button(name, 'jump', `${name}: show the cell that defines it`);
    nameNode.classList.add('jp-JitPanel-functionName');
    const where = location(f.where);
    nameNode.dataset.where = where;
    head.append(toggle, nameNode);
    if (storm) {
      const badge = el('span', 'jp-JitPanel-storm', `storm: ${storm}`);
      badge.title = `recompilation storm: argument '${storm}' keeps changing`;
      head.append(badge);
    }
    // the JIT that compiled it, when it is not jitmagic's own (jm.watch of jax.jit / numba)
    const backend = f.backend || variants.map(v => v.backend).find(b => b) || 'jitmagic';
    if (backend !== 'jitmagic') {
      const b = el('span', 'jp-JitPanel-backend', backend);
      b.title = `compiled by ${backend}, watched by jitmagic`;
      head.append(b);
    }
    head.append(el('span', 'jp-JitPanel-variantCount', plural(variants.length, 'variant')));
    if (where) {
      const loc = button(where, 'jump', `Show ${where} in the notebook`);
      loc.classList.add('jp-JitPanel-where');
      loc.dataset.where = where;
      head.append(loc);
    }
    const clear = button('✕', 'clear-function', `Drop the compiled variants of ${name}`);
    clear.classList.add('jp-JitPanel-clear');
    clear.dataset.fid = f.fid === undefined ? '' : String(f.fid);
    clear.dataset.name = name;
    head.append(clear);
    box.append(head);
    if (collapsed) {
      return box;
    }
    const list = el('div', 'jp-JitPanel-variants');
    for (const v of variants) {
      list.append(this._renderVariant(f, key, v, variants));
    }
    box.append(list);
    return box;
  }

  private _renderVariant(f: IFunctionInfo, key: string, v: IVariantInfo, all: IVariantInfo[]): HTMLElement {
    const row = el('div', 'jp-JitPanel-variant');
    row.dataset.variant = String(v.variant ?? '');
    row.tabIndex = -1;
    if (this._selected && this._selected.key === key && this._selected.variant === (v.variant ?? null)) {
      row.classList.add('jp-mod-selected');
    }
    const head = el('div', 'jp-JitPanel-variantHead');
    head.append(el('span', 'jp-JitPanel-variantId', `#${v.variant ?? '–'}`));
    const st = statics(v.statics);
    if (st) {
      head.append(el('span', 'jp-JitPanel-statics', st));
    }
    const sig = el('span', 'jp-JitPanel-signature', v.signature || '');
    sig.title = v.signature || '';
    head.append(sig);
    const stats = el('div', 'jp-JitPanel-variantStats');
    const calls = typeof v.calls === 'number' ? v.calls : null;
    stats.append(
      stat('compile', `compile ${ms(v.compile_ms)}`),
      stat('calls', callsText(calls, v.run_ms_mean, v.run_ms_total))
    );
    // the kernel's own words for the figures (bounds keep their ≥), else the bare numbers
    const payoff = v.speedup_text ? figuresText(v) : payoffText(v.speedup, v.break_even_calls);
    if (payoff) {
      const p = stat('payoff', payoff);
      p.title = v.speedup_text ? figuresHow(v).join('\n') : v.provenance || '';
      stats.append(p);
    }
    stats.dataset.calls = String(calls ?? '');
    row.append(head, stats);
    if (v.last_reason) {
      row.append(reasonNode(v.last_reason));
    }
    const tools = el('div', 'jp-JitPanel-codeTools');
    const ck = `${key}:${v.variant}`;
    const open = this._code.get(ck);
    for (const [view, label] of VIEWS) {
      const b = button(label, 'code', `Show this variant's ${label}`);
      b.dataset.view = view;
      b.dataset.ck = ck;
      b.setAttribute('aria-pressed', String(!!open && open.view === view && open.diffFrom === undefined));
      tools.append(b);
    }
    const others = all.filter(o => o.variant !== v.variant && typeof o.variant === 'number');
    if (others.length && typeof v.variant === 'number') {
      const sel = document.createElement('select');
      sel.className = 'jp-JitPanel-diff jp-mod-styled';
      sel.dataset.ck = ck;
      sel.setAttribute('aria-label', `Diff variant ${v.variant} against another variant`);
      const none = document.createElement('option');
      none.value = '';
      none.textContent = 'diff with…';
      sel.append(none);
      for (const o of others) {
        const opt = document.createElement('option');
        opt.value = String(o.variant);
        opt.textContent = `#${o.variant}`;
        opt.selected = open?.diffFrom === o.variant;
        sel.append(opt);
      }
      sel.addEventListener('change', () => {
        if (sel.value) {
          void this._fetchCode(f, key, v.variant as number, open?.view ?? 'ir', Number(sel.value));
        }
      });
      tools.append(sel);
    }
    row.append(tools);
    if (open) {
      const pre = el('pre', 'jp-JitPanel-code');
      pre.dataset.view = open.view;
      if (open.diffFrom !== undefined) {
        pre.classList.add('jp-mod-diff');
        pre.dataset.diff = String(open.diffFrom);
      }
      pre.tabIndex = 0;
      if (open.error) {
        pre.classList.add('jp-mod-error');
        pre.textContent = open.error;
      } else if (open.text === undefined) {
        pre.textContent = 'loading…';
      } else if (open.diffFrom !== undefined) {
        for (const line of open.text.split('\n')) {
          const span = el('span', '', line + '\n');
          if (line.startsWith('+') && !line.startsWith('+++')) {
            span.className = 'jp-JitPanel-add';
          } else if (line.startsWith('-') && !line.startsWith('---')) {
            span.className = 'jp-JitPanel-del';
          }
          pre.append(span);
        }
      } else {
        pre.textContent = open.text;
      }
      row.append(pre);
    }
    return row;
  }

  private _renderFeedItem(item: IFeedItem): HTMLElement {
    const e = item.events[0];
    const li = el('li', 'jp-JitPanel-event');
    li.dataset.kind = String(e.kind ?? '');
    li.dataset.seq = String(e.seq ?? '');
    li.tabIndex = 0;
    li.setAttribute('role', 'button');
    const open = this._openEvent === item.key;
    li.setAttribute('aria-expanded', String(open));
    li.dataset.key = item.key;
    const line =
      item.events.length > 1
        ? `${e.qualname || e.function || '?'}: ${item.events.length} recompiles (latest: ${
            (e.reasons ?? []).map(r => r?.text).filter(Boolean).join('; ') || e.message || ''
          })`
        : eventLine(e);
    li.setAttribute('aria-label', `${e.kind ?? 'event'}: ${line}`);
    const text = el('span', 'jp-JitPanel-line');
    text.append(...reasonRuns(line).map(r => (r.keep ? el('span', 'jp-JitPanel-keep', r.text) : document.createTextNode(r.text))));
    li.append(el('span', 'jp-JitPanel-time', clock(e.time)), el('span', 'jp-JitPanel-kind', String(e.kind ?? '?')));
    if (item.events.length > 1) {
      li.dataset.group = String(item.events.length);
      li.append(el('span', 'jp-JitPanel-groupCount', `×${item.events.length}`));
    }
    li.append(text);
    if (open) {
      li.classList.add('jp-mod-selected');
      const box = el('div', 'jp-JitPanel-detailsList');
      for (const ev of item.events) {
        box.append(renderDetails(ev));
      }
      li.append(box);
    }
    return li;
  }

  private _replace(root: HTMLElement): void {
    const scroll = this.node.scrollTop;
    const focused = document.activeElement as HTMLElement | null;
    const focusKey = focused && this.node.contains(focused) ? focusSignature(focused) : null;
    this._body.replaceChildren(root);
    this.node.scrollTop = scroll;
    if (focusKey) {
      // a re-render must not throw the keyboard user back to the top
      const again = this._body.querySelector(focusKey) as HTMLElement | null;
      again?.focus();
    }
  }

  private async _fetchCode(f: IFunctionInfo, key: string, variant: number, view: CodeView, diffFrom?: number) {
    const ck = `${key}:${variant}`;
    const state: ICodeState = { view, diffFrom };
    this._code.set(ck, state);
    this._render();
    if (!this.onCode) {
      state.error = 'not connected to a kernel';
      this._render();
      return;
    }
    try {
      state.text = await this.onCode({ fid: f.fid, qualname: f.qualname || f.name, variant, view, diffFrom });
    } catch (err) {
      state.error = `could not fetch the code: ${(err as Error).message ?? err}`;
    }
    if (this._code.get(ck) === state) {
      this._render();
    }
  }

  private _activate(target: HTMLElement): boolean {
    const action = target.closest('[data-action]') as HTMLElement | null;
    if (action) {
      void this._act(action);
      return true;
    }
    if (target.closest('.jp-JitPanel-details, .jp-JitPanel-code, select, input')) {
      return false; // selecting text keeps things open; form controls handle themselves
    }
    const li = target.closest('.jp-JitPanel-event') as HTMLElement | null;
    if (li && li.dataset.key) {
      this._openEvent = this._openEvent === li.dataset.key ? null : li.dataset.key;
      this._render();
      const again = this._body.querySelector(`.jp-JitPanel-event[data-key="${li.dataset.key}"]`) as HTMLElement | null;
      again?.focus();
      (again?.querySelector('.jp-JitPanel-detailsList') as HTMLElement | null)?.scrollIntoView?.({ block: 'nearest' });
      return true;
    }
    return false;
  }

  private async _act(b: HTMLElement): Promise<void> {
    const m = this._model;
    switch (b.dataset.action) {
      case 'refresh':
        this.onRefresh?.();
        return;
      case 'jump':
        if (b.dataset.where) {
          this.onJump?.(b.dataset.where);
        }
        return;
      case 'toggle-function': {
        const key = b.closest('.jp-JitPanel-function')?.getAttribute('data-key') ?? '';
        if (this._collapsed.has(key)) {
          this._collapsed.delete(key);
        } else {
          this._collapsed.add(key);
        }
        this._render();
        return;
      }
      case 'code': {
        const box = b.closest('.jp-JitPanel-function') as HTMLElement | null;
        const key = box?.dataset.key ?? '';
        const f = m?.functions.find(f => functionKey(f) === key);
        const variant = Number(b.closest('.jp-JitPanel-variant')?.getAttribute('data-variant'));
        const view = b.dataset.view as CodeView;
        const ck = `${key}:${variant}`;
        const open = this._code.get(ck);
        if (open && open.view === view && open.diffFrom === undefined) {
          this._code.delete(ck); // a second click closes it
          this._render();
        } else if (f && isFinite(variant)) {
          await this._fetchCode(f, key, variant, view); // a view button shows plain code
        }
        return;
      }
      case 'clear-function': {
        const name = b.dataset.name ?? '?';
        if (await this.confirm(`Drop every compiled variant of ${name}? It compiles again on its next call.`)) {
          this.onClear?.(b.dataset.fid ? Number(b.dataset.fid) : undefined);
        }
        return;
      }
      case 'clear-all':
        if (m && (await this.confirm('Drop every compiled variant of every function (as %jit_cache --clear)?'))) {
          this.onClear?.(undefined);
        }
        return;
    }
  }

  private _onClick = (ev: MouseEvent): void => {
    this._activate(ev.target as HTMLElement);
  };

  private _onKey = (ev: KeyboardEvent): void => {
    if (ev.key !== 'Enter' && ev.key !== ' ') {
      return;
    }
    const t = ev.target as HTMLElement;
    if (t.tagName === 'BUTTON' || t.tagName === 'INPUT' || t.tagName === 'SELECT') {
      return; // native controls already turn Enter into a click
    }
    if (this._activate(t)) {
      ev.preventDefault();
    }
  };

  private _model: JitModel | null = null;
  private _sourceNode = el('span', 'jp-JitPanel-source');
  private _search = document.createElement('input');
  private _kind = document.createElement('select');
  private _body = el('div', 'jp-JitPanel-main');
  private _openEvent: string | null = null;
  private _collapsed = new Set<string>();
  private _code = new Map<string, ICodeState>();
  private _selected: { key: string; variant: number | null } | null = null;
  private _frame = 0;
}

/** A CSS selector that finds the same control after a re-render. */
function focusSignature(node: HTMLElement): string | null {
  const fn = node.closest('.jp-JitPanel-function') as HTMLElement | null;
  const scope = fn ? `.jp-JitPanel-function[data-key="${fn.dataset.key}"] ` : '';
  if (node.classList.contains('jp-JitPanel-event') && node.dataset.key) {
    return `.jp-JitPanel-event[data-key="${node.dataset.key}"]`;
  }
  if (node.dataset.action) {
    const v = node.closest('.jp-JitPanel-variant') as HTMLElement | null;
    const vs = v ? `.jp-JitPanel-variant[data-variant="${v.dataset.variant}"] ` : '';
    const view = node.dataset.view ? `[data-view="${node.dataset.view}"]` : '';
    return `${scope}${vs}[data-action="${node.dataset.action}"]${view}`;
  }
  return null;
}

function reasonNode(text: string): HTMLElement {
  const r = el('div', 'jp-JitPanel-reason');
  for (const run of reasonRuns(text)) {
    r.append(run.keep ? el('span', 'jp-JitPanel-keep', run.text) : document.createTextNode(run.text));
  }
  r.title = text;
  return r;
}

function stat(name: string, text: string): HTMLElement {
  const s = el('span', 'jp-JitPanel-stat', text);
  s.dataset.stat = name;
  return s;
}

function button(text: string, action: string, label: string): HTMLButtonElement {
  const b = el('button', 'jp-JitPanel-button', text);
  b.type = 'button';
  b.dataset.action = action;
  b.title = label;
  b.setAttribute('aria-label', label);
  return b;
}

function renderDetails(e: IJitEvent): HTMLElement {
  const box = el('div', 'jp-JitPanel-details');
  const facts: [string, string][] = [
    ['function', e.qualname || e.function || ''],
    ['backend', e.backend || 'jitmagic'],
    ['where', location(e.where)],
    ['variant', e.variant === null || e.variant === undefined ? '–' : String(e.variant)],
    ['static', statics(e.statics) || '–'],
    ['signature', e.signature ?? ''],
    ['message', e.message ?? '']
  ];
  box.append(keyValues(facts));
  const reasons = Array.isArray(e.reasons) ? e.reasons : [];
  reasons.forEach((r, i) => {
    const head = reasons.length > 1 ? `Reason ${i + 1}` : 'Reason';
    box.append(el('div', 'jp-JitPanel-detailsHead', head));
    const rows: [string, string][] = [];
    for (const k of ['kind', 'arg', 'old', 'new', 'text'] as const) {
      const v = r?.[k];
      if (v !== null && v !== undefined && v !== '') {
        rows.push([k, String(v)]);
      }
    }
    box.append(keyValues(rows));
  });
  const timings = e.timings_ms && typeof e.timings_ms === 'object' ? e.timings_ms : {};
  const phases = Object.keys(timings);
  if (phases.length) {
    box.append(el('div', 'jp-JitPanel-detailsHead', 'Phase timings'));
    box.append(keyValues(phases.map(p => [p, ms(timings[p])])));
  }
  return box;
}

function keyValues(rows: [string, string][]): HTMLElement {
  const t = el('table', 'jp-JitPanel-kv');
  for (const [k, v] of rows) {
    const tr = el('tr');
    tr.append(el('th', '', k), el('td', '', v));
    t.append(tr);
  }
  return t;
}

function count(label: string, one: string, n: number, many?: string): HTMLElement {
  const c = el('span', 'jp-JitPanel-count');
  c.dataset.count = label;
  c.append(el('b', '', String(n)), document.createTextNode(` ${n === 1 ? one : many ?? label}`));
  return c;
}

export function el<K extends keyof HTMLElementTagNameMap>(
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
