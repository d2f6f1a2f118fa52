/**
 * JitPanel: the "JIT" side panel, a view over the JitModel of the active notebook.
 *
 * The toolbar (search, event-kind filter, refresh, clear) is built once so typing keeps focus,
 * and sits above the scrolling body rather than over it, so nothing the panel scrolls to hides
 * behind it. The body is rebuilt from the model at most once per animation frame; a function's
 * card is rebuilt only when its record or what the user opened in it changed, so a storm in one
 * function of a thousand costs one card. What the user opened (collapsed functions, an event's
 * details, a variant's code, an unfolded storm) is panel state and survives re-renders. Every
 * control is a button or carries role/tabindex; arrow keys move between rows.
 */
import { Widget } from '@lumino/widgets';

import { ICodeRequest, IProfileRequest } from './connection';
import {
  byWorker,
  eventFacts,
  feedItems,
  filterKinds,
  IFeedItem,
  itemLine,
  workerLabel
} from './events';
import { foldVariants, idsText, IVariantGroup, valuesText } from './fold';
import {
  callsText,
  clock,
  figuresHow,
  figuresText,
  location,
  ms,
  payoffText,
  plural,
  readable,
  reasonRuns,
  signatureTip,
  statics,
  statusText,
  tierName
} from './format';
import { functionKey, JitModel } from './model';
import { IProfileState, renderProfile } from './profile';
import {
  CodeView,
  IFunctionInfo,
  IJitEvent,
  IProfile,
  IVariantInfo,
  IWorkerVariants
} from './protocol';
import { IVariantRef } from './registry';

const VIEWS: [CodeView, string][] = [
  ['ir', 'IR'],
  ['llvm', 'LLVM'],
  ['asm', 'asm']
];
/** An open run of recompiles shows the details of this many of its newest events. */
const DETAILS_SHOWN = 20;
/** Arrowing through the diff list fetches only where the user stops. */
const DIFF_DELAY_MS = 400;
/** What arrow keys move between, in document order. */
const ROWS =
  '.jp-JitPanel-functionName, .jp-JitPanel-fold, .jp-JitPanel-variant, .jp-JitPanel-event';

interface ICodeState {
  view: CodeView;
  diffFrom?: number;
  text?: string;
  error?: string;
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
    this.node.addEventListener('focusin', this._onFocus);
    this.node.append(this._buildToolbar(), this._body);
    this._render();
  }

  /** The notebook being shown, e.g. `analysis.ipynb` (its folder in the tooltip). */
  set source(path: string) {
    const name = path ? path.split('/').pop() || path : '';
    this._sourceNode.textContent = name || 'no notebook';
    this._sourceNode.title = path;
  }

  /** Called when the user asks for fresh numbers. */
  onRefresh: (() => void) | null = null;
  /** Scroll the notebook to the cell of a location (`In[3]:2`). */
  onJump: ((where: string) => void) | null = null;
  /** Fetch a variant's code from the kernel. */
  onCode: ((r: ICodeRequest) => Promise<string>) | null = null;
  /** Have the kernel profile a variant on the inputs of its first call. */
  onProfile: ((r: IProfileRequest) => Promise<IProfile>) | null = null;
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
    this._profiles.clear();
    this._cards.clear();
    this._selected = null;
    model?.changed.connect(this._schedule, this);
    this._schedule();
  }

  /** The scrolling part below the toolbar. */
  get body(): HTMLElement {
    return this._body;
  }

  /** Reveal one variant: expand its function (and its folded run), mark it, scroll to it. */
  selectVariant(ref: IVariantRef): void {
    const f = this._model?.functions.find(f =>
      ref.fid !== undefined && f.fid !== undefined
        ? f.fid === ref.fid
        : (f.qualname || f.name) === ref.name
    );
    if (!f) {
      return;
    }
    const key = functionKey(f);
    this._collapsed.delete(key);
    this._selected = { key, variant: ref.variant };
    const group = foldVariants(variantsOf(f)).find(
      g => g.arg && g.variants.some(v => (v.variant ?? null) === ref.variant)
    );
    if (group) {
      this._unfolded.add(foldKey(key, group));
    }
    this._render();
    const row = this._body.querySelector(
      '.jp-JitPanel-variant.jp-mod-selected'
    ) as HTMLElement | null;
    row?.scrollIntoView?.({ block: 'nearest' });
    row?.focus({ preventScroll: true });
  }

  dispose(): void {
    this._model?.changed.disconnect(this._schedule, this);
    if (this._frame) {
      cancelAnimationFrame(this._frame);
    }
    clearTimeout(this._diffTimer);
    super.dispose();
  }

  protected onAfterShow(): void {
    this._schedule();
  }

  private _schedule(): void {
    if (this._frame || this.isDisposed) {
      return;
    }
    this._pendingSince = performance.now();
    // many events in one burst (a recompilation storm) cost one render
    this._frame = requestAnimationFrame(() => {
      this._frame = 0;
      this._render();
    });
  }

  private _buildToolbar(): HTMLElement {
    const bar = el('div', 'jp-JitPanel-toolbar');
    const header = el('div', 'jp-JitPanel-header');
    const actions = el('span', 'jp-JitPanel-actions');
    actions.append(
      button(
        'Refresh',
        'refresh',
        'Ask the kernel for fresh call counts and run times'
      ),
      button(
        'Clear cache',
        'clear-all',
        'Drop every compiled variant (as %jit_cache --clear)'
      )
    );
    header.append(
      el('span', 'jp-JitPanel-title', 'JIT'),
      this._sourceNode,
      actions
    );
    this._sourceNode.textContent = 'no notebook';

    const filters = el('div', 'jp-JitPanel-filters');
    this._search.type = 'search';
    this._search.className = 'jp-JitPanel-search jp-mod-styled';
    this._search.placeholder = 'Filter functions';
    this._search.setAttribute(
      'aria-label',
      'Filter functions and events by name'
    );
    this._search.addEventListener('input', () => this._render());
    this._kind.className = 'jp-JitPanel-kindFilter jp-mod-styled';
    this._kind.setAttribute('aria-label', 'Show events of one kind');
    this._setKinds(filterKinds([]));
    this._kind.addEventListener('change', () => this._render());
    filters.append(this._search, this._kind);
    bar.append(header, filters);
    return bar;
  }

  /** The kind filter offers the known kinds and any other kind the kernel has sent. */
  private _setKinds(kinds: string[]): void {
    const all = ['', ...kinds];
    if (all.join() === this._kindList) {
      return;
    }
    this._kindList = all.join();
    const value = this._kind.value;
    this._kind.replaceChildren(
      ...all.map(k => {
        const o = document.createElement('option');
        o.value = k;
        o.textContent = k ? `${k.replace(/_/g, ' ')} events` : 'all events';
        return o;
      })
    );
    this._kind.value = all.includes(value) ? value : '';
  }

  private _render(): void {
    const started = performance.now();
    const m = this._model;
    const top: HTMLElement[] = [];
    const cards: HTMLElement[] = [];
    const bottom: HTMLElement[] = [];
    if (!m || m.state !== 'connected') {
      const msg =
        !m || m.state === 'no-kernel'
          ? 'Open a notebook with a running kernel.'
          : 'jitmagic is not loaded in this kernel. Run %load_ext jitmagic.';
      top.push(el('div', 'jp-JitPanel-empty', msg));
      if (m?.note) {
        top.push(el('div', 'jp-JitPanel-note', m.note));
      }
      this._cards.clear();
      this._replace(top, cards, bottom);
      return;
    }
    const counts = el('div', 'jp-JitPanel-counts');
    counts.append(
      countNode('compiles', 'compile', m.compiles),
      countNode('misses', 'recompile', m.misses, 'recompiles'),
      countNode('evictions', 'eviction', m.evictions)
    );
    counts.title = statusText(m.compiles, m.misses);
    top.push(counts);
    if (m.note) {
      top.push(el('div', 'jp-JitPanel-note', m.note));
    }

    const needle = this._search.value.trim().toLowerCase();
    const matches = (name: string) =>
      !needle || name.toLowerCase().includes(needle);
    const fns = m.functions.filter(
      f => f && matches(f.qualname || f.name || '')
    );
    top.push(this._functionsHeading(fns));
    if (!m.functions.length) {
      top.push(
        el('div', 'jp-JitPanel-empty', 'No jitted function has run yet.')
      );
    } else if (!fns.length) {
      top.push(
        el('div', 'jp-JitPanel-empty', `No function matches “${needle}”.`)
      );
    }
    const seen = new Set<string>();
    for (const f of fns) {
      const key = functionKey(f);
      seen.add(key);
      cards.push(this._card(f, key, m.storms.get(key) ?? ''));
    }
    for (const key of Array.from(this._cards.keys())) {
      if (!seen.has(key)) {
        this._cards.delete(key); // a function gone from the model (or the filter)
      }
    }

    this._setKinds(filterKinds(m.events));
    const kind = this._kind.value;
    const events = m.events.filter(
      e =>
        e &&
        (!kind || e.kind === kind) &&
        matches(e.qualname || e.function || '')
    );
    const items = feedItems(events);
    const workers = m.events.some(e => e && workerLabel(e));
    bottom.push(this._eventsHeading(workers));
    if (!events.length) {
      bottom.push(
        el(
          'div',
          'jp-JitPanel-empty',
          m.events.length ? 'No event matches.' : 'No compile events yet.'
        )
      );
    }
    if (!items.some(i => i.key === this._feedFocus)) {
      this._feedFocus = items[0]?.key ?? '';
    }
    if (workers && this._byWorker) {
      for (const g of byWorker(items)) {
        bottom.push(el('h4', 'jp-JitPanel-worker', g.worker || 'this kernel'));
        bottom.push(this._feed(g.items));
      }
    } else {
      bottom.push(this._feed(items));
    }
    this._replace(top, cards, bottom);
    // layout now, inside the measure, so the figure is what the user waits for
    void this._body.offsetHeight;
    const end = performance.now();
    measure('jitmagic:render', started, end);
    if (this._pendingSince) {
      measure('jitmagic:update', this._pendingSince, end);
      this._pendingSince = 0;
    }
  }

  private _functionsHeading(fns: IFunctionInfo[]): HTMLElement {
    const h = el('h3', 'jp-JitPanel-section');
    h.append(el('span', '', 'Functions'));
    if (fns.length > 1) {
      const all = fns.every(f => this._collapsed.has(functionKey(f)));
      const b = button(
        all ? 'Expand all' : 'Collapse all',
        all ? 'expand-all' : 'collapse-all',
        all
          ? 'Show the variants of every function'
          : 'Show only the functions’ names'
      );
      b.classList.add('jp-JitPanel-sectionButton');
      h.append(b);
    }
    return h;
  }

  private _eventsHeading(workers: boolean): HTMLElement {
    const h = el('h3', 'jp-JitPanel-section');
    h.append(el('span', '', 'Events'));
    if (workers) {
      const b = button(
        'By worker',
        'by-worker',
        'Group the events by the process they came from'
      );
      b.classList.add('jp-JitPanel-sectionButton');
      b.setAttribute('aria-pressed', String(this._byWorker));
      h.append(b);
    }
    return h;
  }

  private _feed(items: IFeedItem[]): HTMLElement {
    const feed = el('ol', 'jp-JitPanel-events');
    feed.setAttribute('aria-label', 'Compile events, newest first');
    for (const item of items) {
      feed.append(this._renderFeedItem(item));
    }
    return feed;
  }

  /** A function's card, reused while its record and its open parts are unchanged. */
  private _card(f: IFunctionInfo, key: string, storm: string): HTMLElement {
    const open = Array.from(this._code.entries()).filter(([ck]) =>
      ck.startsWith(`${key}:`)
    );
    const profiles = Array.from(this._profiles.entries())
      .filter(([ck]) => ck.startsWith(`${key}:`))
      .map(([ck, st]) => [ck, st.profile, st.error, Array.from(st.open ?? [])]);
    const sel =
      this._selected && this._selected.key === key
        ? this._selected.variant
        : '';
    const unfolded = Array.from(this._unfolded).filter(k =>
      k.startsWith(`${key}|`)
    );
    const signature = JSON.stringify([
      f,
      storm,
      this._collapsed.has(key),
      sel,
      open,
      profiles,
      unfolded
    ]);
    const cached = this._cards.get(key);
    if (cached && cached.signature === signature) {
      return cached.node;
    }
    const node = this._renderFunction(f, key, storm);
    this._cards.set(key, { signature, node });
    return node;
  }

  private _renderFunction(
    f: IFunctionInfo,
    key: string,
    storm: string
  ): HTMLElement {
    const name = f.qualname || f.name || '?';
    const variants = variantsOf(f);
    const collapsed = this._collapsed.has(key);
    const box = el('div', 'jp-JitPanel-function');
    box.dataset.name = name;
    box.dataset.key = key;
    const head = el('div', 'jp-JitPanel-functionHead');
    const toggle = button(
      collapsed ? '▸' : '▾',
      'toggle-function',
      `${collapsed ? 'Expand' : 'Collapse'} ${name}`
    );
    toggle.classList.add('jp-JitPanel-toggle');
    toggle.setAttribute('aria-expanded', String(!collapsed));
    toggle.tabIndex = -1; // the name takes the focus; arrow right and left open and close
    const where = location(f.where);
    const nameNode = button(
      '',
      'jump',
      `${name}: show the cell that defines it`
    );
    nameNode.classList.add('jp-JitPanel-functionName');
    nameNode.append(nameText(name));
    nameNode.setAttribute('aria-expanded', String(!collapsed));
    nameNode.dataset.where = where;
    const clear = button(
      '✕',
      'clear-function',
      `Drop the compiled variants of ${name}`
    );
    clear.classList.add('jp-JitPanel-clear');
    clear.dataset.fid = f.fid === undefined ? '' : String(f.fid);
    clear.dataset.name = name;
    // name and ✕ on the first line, the facts on the second: a narrow panel squeezes none
    const meta = el('div', 'jp-JitPanel-functionMeta');
    meta.append(
      el('span', 'jp-JitPanel-variantCount', plural(variants.length, 'variant'))
    );
    const remote = workersOf(f);
    if (remote.length) {
      const w = el(
        'span',
        'jp-JitPanel-workerCount',
        `+ ${plural(remote.length, 'variant')} on workers`
      );
      w.title =
        'variants compiled or loaded on a tracked Dask cluster (jm.dask.track)';
      meta.append(w);
    }
    if (storm) {
      const badge = el('span', 'jp-JitPanel-storm', `storm: ${storm}`);
      badge.title = `recompilation storm: argument '${storm}' keeps changing`;
      meta.append(badge);
    }
    // the JIT that compiled it, when it is not jitmagic's own (jm.watch of jax.jit / numba)
    const backend =
      f.backend || variants.map(v => v.backend).find(b => b) || 'jitmagic';
    if (backend !== 'jitmagic') {
      const b = el('span', 'jp-JitPanel-backend', backend);
      b.title = `compiled by ${backend}, watched by jitmagic`;
      meta.append(b);
    } else if (f.front === 'njit') {
      const b = el('span', 'jp-JitPanel-backend', 'njit');
      b.title =
        "jitmagic.njit: NumPy's semantics (in-place updates, loops on values)";
      meta.append(b);
    }
    if (where) {
      const loc = button(where, 'jump', `Show ${where} in the notebook`);
      loc.classList.add('jp-JitPanel-where');
      loc.dataset.where = where;
      loc.tabIndex = -1; // the name jumps to the same cell
      meta.append(loc);
    }
    head.append(toggle, nameNode, clear, meta);
    box.append(head);
    if (collapsed) {
      return box;
    }
    const list = el('div', 'jp-JitPanel-variants');
    for (const group of foldVariants(variants)) {
      if (group.arg) {
        list.append(this._renderFold(f, key, group, variants));
      } else {
        list.append(this._renderVariant(f, key, group.variants[0], variants));
      }
    }
    box.append(list);
    if (remote.length) {
      box.append(renderWorkers(remote));
    }
    return box;
  }

  /** A folded run of variants: which argument changes, through which values; opens on Enter. */
  private _renderFold(
    f: IFunctionInfo,
    key: string,
    group: IVariantGroup,
    all: IVariantInfo[]
  ): HTMLElement {
    const fk = foldKey(key, group);
    const open = this._unfolded.has(fk);
    const box = el('div', 'jp-JitPanel-foldGroup');
    const row = el('div', 'jp-JitPanel-fold');
    row.dataset.fold = fk;
    row.tabIndex = 0;
    row.setAttribute('role', 'button');
    row.setAttribute('aria-expanded', String(open));
    const n = group.variants.length;
    const compile = group.variants.reduce(
      (a, v) => a + (typeof v.compile_ms === 'number' ? v.compile_ms : 0),
      0
    );
    const calls = group.variants.reduce(
      (a, v) => a + (typeof v.calls === 'number' ? v.calls : 0),
      0
    );
    const head = el('div', 'jp-JitPanel-foldHead');
    head.append(
      el('span', 'jp-JitPanel-foldMark', open ? '▾' : '▸'),
      el('span', 'jp-JitPanel-variantId', idsText(group.variants)),
      el(
        'span',
        'jp-JitPanel-foldCount',
        `${n} variants differing in ${group.arg}`
      )
    );
    const values = el(
      'div',
      'jp-JitPanel-foldValues',
      readable(`${group.arg} = ${valuesText(group.values ?? [])}`)
    );
    values.title = `${group.arg} = ${(group.values ?? []).join(', ')}`;
    const stats = el('div', 'jp-JitPanel-variantStats');
    stats.append(
      stat('compile', `compile ${ms(compile)} in all`),
      stat('calls', `${plural(calls, 'call')} in all`)
    );
    row.append(head, values, stats);
    row.setAttribute(
      'aria-label',
      `${n} variants of ${f.qualname || f.name} differing in ${group.arg}: ${valuesText(
        group.values ?? []
      )}. ${open ? 'Collapse' : 'Expand'}.`
    );
    box.append(row);
    if (open) {
      const inner = el('div', 'jp-JitPanel-foldBody');
      for (const v of group.variants) {
        inner.append(this._renderVariant(f, key, v, all));
      }
      box.append(inner);
    }
    return box;
  }

  private _renderVariant(
    f: IFunctionInfo,
    key: string,
    v: IVariantInfo,
    all: IVariantInfo[]
  ): HTMLElement {
    const row = el('div', 'jp-JitPanel-variant');
    row.dataset.variant = String(v.variant ?? '');
    row.tabIndex = -1;
    if (
      this._selected &&
      this._selected.key === key &&
      this._selected.variant === (v.variant ?? null)
    ) {
      row.classList.add('jp-mod-selected');
    }
    const head = el('div', 'jp-JitPanel-variantHead');
    head.append(el('span', 'jp-JitPanel-variantId', `#${v.variant ?? '–'}`));
    const st = statics(v.statics);
    if (st) {
      const node = el('span', 'jp-JitPanel-statics', readable(st));
      node.title = st;
      head.append(node);
    }
    const sig = el('span', 'jp-JitPanel-signature', v.signature || '');
    sig.title = signatureTip(v.signature || '');
    if (sig.title !== (v.signature || '')) {
      sig.classList.add('jp-mod-weak');
    }
    head.append(sig);
    const stats = el('div', 'jp-JitPanel-variantStats');
    const calls = typeof v.calls === 'number' ? v.calls : null;
    stats.append(
      stat('compile', `compile ${ms(v.compile_ms)}`),
      stat('calls', callsText(calls, v.run_ms_mean, v.run_ms_total))
    );
    const tier = tierName((v as { tier?: unknown }).tier);
    if (tier) {
      const t = stat('tier', `tier ${tier}`);
      t.title =
        'the optimisation level of the code that runs: quick or light first, O3 after a tier-up';
      stats.append(t);
    }
    // the kernel's own words for the figures (bounds keep their ≥), else the bare numbers
    const payoff = v.speedup_text
      ? figuresText(v)
      : payoffText(v.speedup, v.break_even_calls);
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
      b.setAttribute(
        'aria-pressed',
        String(!!open && open.view === view && open.diffFrom === undefined)
      );
      tools.append(b);
    }
    const others = all.filter(
      o => o.variant !== v.variant && typeof o.variant === 'number'
    );
    if (others.length && typeof v.variant === 'number') {
      tools.append(this._diffSelect(f, key, v.variant, others, open));
    }
    const prof = this._profiles.get(ck);
    if ((f.backend ?? 'jitmagic') === 'jitmagic') {
      tools.append(profileButton(v, !!prof));
    }
    row.append(tools);
    if (open) {
      row.append(codeNode(open));
    }
    if (prof) {
      row.append(renderProfile(prof));
    }
    return row;
  }

  /** `diff with…`: arrowing through it waits for the user to stop before asking the kernel. */
  private _diffSelect(
    f: IFunctionInfo,
    key: string,
    variant: number,
    others: IVariantInfo[],
    open: ICodeState | undefined
  ): HTMLSelectElement {
    const sel = document.createElement('select');
    sel.className = 'jp-JitPanel-diff jp-mod-styled';
    sel.dataset.ck = `${key}:${variant}`;
    sel.setAttribute(
      'aria-label',
      `Diff variant ${variant} against another variant`
    );
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
      clearTimeout(this._diffTimer);
      if (!sel.value) {
        return;
      }
      const from = Number(sel.value);
      this._diffTimer = window.setTimeout(() => {
        void this._fetchCode(f, key, variant, open?.view ?? 'ir', from);
      }, DIFF_DELAY_MS);
    });
    return sel;
  }

  private _renderFeedItem(item: IFeedItem): HTMLElement {
    const e = item.events[0];
    const li = el('li', 'jp-JitPanel-event');
    li.dataset.kind = String(e.kind ?? '');
    li.dataset.seq = String(e.seq ?? '');
    li.tabIndex = item.key === this._feedFocus ? 0 : -1; // one Tab stop for the whole feed
    li.setAttribute('role', 'button');
    const open = this._openEvent === item.key;
    li.setAttribute('aria-expanded', String(open));
    li.dataset.key = item.key;
    const line = readable(itemLine(item));
    const worker = workerLabel(e);
    li.setAttribute(
      'aria-label',
      `${e.kind ?? 'event'}${worker ? ` in ${worker}` : ''}: ${line}`
    );
    const text = el('span', 'jp-JitPanel-line');
    text.append(
      ...reasonRuns(line).map(r =>
        r.keep
          ? el('span', 'jp-JitPanel-keep', r.text)
          : document.createTextNode(r.text)
      )
    );
    li.append(
      el('span', 'jp-JitPanel-time', clock(e.time)),
      el('span', 'jp-JitPanel-kind', String(e.kind ?? '?').replace(/_/g, ' '))
    );
    if (worker) {
      li.append(el('span', 'jp-JitPanel-workerTag', worker));
    }
    if (item.events.length > 1) {
      li.dataset.group = String(item.events.length);
      li.append(el('span', 'jp-JitPanel-groupCount', `×${item.events.length}`));
    }
    li.append(text);
    if (open) {
      li.classList.add('jp-mod-selected');
      const box = el('div', 'jp-JitPanel-detailsList');
      for (const ev of item.events.slice(0, DETAILS_SHOWN)) {
        box.append(renderDetails(ev));
      }
      const rest = item.events.length - DETAILS_SHOWN;
      if (rest > 0) {
        box.append(
          el(
            'div',
            'jp-JitPanel-note',
            `and ${plural(rest, 'earlier event')}: %jit_log shows every one`
          )
        );
      }
      li.append(box);
    }
    return li;
  }

  /**
   * Put the new parts in place. The function cards are reconciled, not replaced: a card that
   * did not change stays where it is in the DOM, so the browser restyles and lays out only the
   * cards that changed (a storm in one function of a thousand restyles one card).
   */
  private _replace(
    top: HTMLElement[],
    cards: HTMLElement[],
    bottom: HTMLElement[]
  ): void {
    const scroll = this._body.scrollTop;
    const focused = document.activeElement as HTMLElement | null;
    const focusKey =
      focused && this._body.contains(focused) ? focusSignature(focused) : null;
    if (!this._root.parentNode) {
      this._root.append(this._top, this._functions, this._bottom);
      this._body.append(this._root);
    }
    this._top.replaceChildren(...top);
    const keep = new Set(cards);
    for (const child of Array.from(this._functions.children)) {
      if (!keep.has(child as HTMLElement)) {
        child.remove();
      }
    }
    cards.forEach((card, i) => {
      const at = this._functions.children[i] ?? null;
      if (at !== card) {
        this._functions.insertBefore(card, at);
      }
    });
    this._bottom.replaceChildren(...bottom);
    this._body.scrollTop = scroll;
    if (focusKey && document.activeElement !== focused) {
      // a re-render must not throw the keyboard user back to the top
      const again = this._body.querySelector(focusKey) as HTMLElement | null;
      again?.focus({ preventScroll: true });
    }
  }

  private async _fetchProfile(f: IFunctionInfo, key: string, variant: number) {
    const ck = `${key}:${variant}`;
    const state: IProfileState = {};
    this._profiles.set(ck, state);
    this._render();
    if (!this.onProfile) {
      state.error = 'not connected to a kernel';
      this._render();
      return;
    }
    try {
      state.profile = await this.onProfile({
        fid: f.fid,
        qualname: f.qualname || f.name,
        variant
      });
    } catch (err) {
      state.error = `could not profile: ${(err as Error).message ?? err}`;
    }
    if (this._profiles.get(ck) === state) {
      this._render();
    }
  }

  private async _fetchCode(
    f: IFunctionInfo,
    key: string,
    variant: number,
    view: CodeView,
    diffFrom?: number
  ) {
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
      state.text = await this.onCode({
        fid: f.fid,
        qualname: f.qualname || f.name,
        variant,
        view,
        diffFrom
      });
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
    if (
      target.closest('.jp-JitPanel-details, .jp-JitPanel-code, select, input')
    ) {
      return false; // selecting text keeps things open; form controls handle themselves
    }
    const fold = target.closest('.jp-JitPanel-fold') as HTMLElement | null;
    if (fold && fold.dataset.fold) {
      this._toggleFold(fold.dataset.fold);
      return true;
    }
    const li = target.closest('.jp-JitPanel-event') as HTMLElement | null;
    if (li && li.dataset.key) {
      this._toggleEvent(li.dataset.key);
      return true;
    }
    return false;
  }

  private _toggleFold(fk: string, open?: boolean): void {
    const now = open ?? !this._unfolded.has(fk);
    if (now) {
      this._unfolded.add(fk);
    } else {
      this._unfolded.delete(fk);
    }
    this._render();
    (
      this._body.querySelector(
        `.jp-JitPanel-fold[data-fold="${css(fk)}"]`
      ) as HTMLElement | null
    )?.focus({ preventScroll: true });
  }

  private _toggleEvent(key: string, open?: boolean): void {
    const now = open ?? this._openEvent !== key;
    this._openEvent = now
      ? key
      : this._openEvent === key
        ? null
        : this._openEvent;
    this._render();
    const again = this._body.querySelector(
      `.jp-JitPanel-event[data-key="${css(key)}"]`
    ) as HTMLElement | null;
    again?.focus({ preventScroll: true });
    (
      again?.querySelector('.jp-JitPanel-detailsList') as HTMLElement | null
    )?.scrollIntoView?.({ block: 'nearest' });
  }

  private _toggleFunction(key: string, open?: boolean): void {
    const now = open ?? this._collapsed.has(key);
    if (now) {
      this._collapsed.delete(key);
    } else {
      this._collapsed.add(key);
    }
    this._render();
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
      case 'toggle-function':
        this._toggleFunction(
          b.closest('.jp-JitPanel-function')?.getAttribute('data-key') ?? ''
        );
        return;
      case 'collapse-all':
      case 'expand-all':
        for (const f of m?.functions ?? []) {
          if (b.dataset.action === 'collapse-all') {
            this._collapsed.add(functionKey(f));
          } else {
            this._collapsed.delete(functionKey(f));
          }
        }
        this._render();
        (
          this._body.querySelector(
            '.jp-JitPanel-sectionButton'
          ) as HTMLElement | null
        )?.focus();
        return;
      case 'by-worker':
        this._byWorker = !this._byWorker;
        this._render();
        return;
      case 'code': {
        const box = b.closest('.jp-JitPanel-function') as HTMLElement | null;
        const key = box?.dataset.key ?? '';
        const f = m?.functions.find(f => functionKey(f) === key);
        const variant = Number(
          b.closest('.jp-JitPanel-variant')?.getAttribute('data-variant')
        );
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
      case 'profile': {
        const box = b.closest('.jp-JitPanel-function') as HTMLElement | null;
        const key = box?.dataset.key ?? '';
        const f = m?.functions.find(f => functionKey(f) === key);
        const variant = Number(
          b.closest('.jp-JitPanel-variant')?.getAttribute('data-variant')
        );
        const ck = `${key}:${variant}`;
        const shown = this._profiles.get(ck);
        if (shown && (shown.profile || shown.error)) {
          this._profiles.delete(ck); // a second click closes it
          this._render();
        } else if (!shown && f && isFinite(variant)) {
          await this._fetchProfile(f, key, variant);
        }
        return;
      }
      case 'profile-line': {
        const ck = `${
          b.closest('.jp-JitPanel-function')?.getAttribute('data-key') ?? ''
        }:${b.closest('.jp-JitPanel-variant')?.getAttribute('data-variant')}`;
        const st = this._profiles.get(ck);
        const line = Number(b.dataset.line);
        if (st && isFinite(line)) {
          const open = (st.open = st.open ?? new Set<number>());
          if (open.has(line)) {
            open.delete(line);
          } else {
            open.add(line);
          }
          this._render();
          (
            this._body.querySelector(
              `.jp-JitProfile-line[data-line="${line}"]`
            ) as HTMLElement | null
          )?.focus({ preventScroll: true });
        }
        return;
      }
      case 'clear-function': {
        const name = b.dataset.name ?? '?';
        if (
          await this.confirm(
            `Drop every compiled variant of ${name}? It compiles again on its next call.`
          )
        ) {
          this.onClear?.(b.dataset.fid ? Number(b.dataset.fid) : undefined);
        }
        return;
      }
      case 'clear-all':
        if (
          m &&
          (await this.confirm(
            'Drop every compiled variant of every function (as %jit_cache --clear)?'
          ))
        ) {
          this.onClear?.(undefined);
        }
        return;
    }
  }

  private _onClick = (ev: MouseEvent): void => {
    this._activate(ev.target as HTMLElement);
  };

  /** The feed keeps one Tab stop: the event last focused. */
  private _onFocus = (ev: FocusEvent): void => {
    const li = (ev.target as HTMLElement).closest?.(
      '.jp-JitPanel-event'
    ) as HTMLElement | null;
    if (!li || !li.dataset.key || li.dataset.key === this._feedFocus) {
      return;
    }
    this._feedFocus = li.dataset.key;
    for (const other of Array.from(
      this._body.querySelectorAll('.jp-JitPanel-event')
    )) {
      (other as HTMLElement).tabIndex = other === li ? 0 : -1;
    }
  };

  private _onKey = (ev: KeyboardEvent): void => {
    const t = ev.target as HTMLElement;
    if (this._navigate(ev, t)) {
      ev.preventDefault();
      return;
    }
    if (ev.key !== 'Enter' && ev.key !== ' ') {
      return;
    }
    if (
      t.tagName === 'BUTTON' ||
      t.tagName === 'INPUT' ||
      t.tagName === 'SELECT'
    ) {
      return; // native controls already turn Enter into a click
    }
    if (this._activate(t)) {
      ev.preventDefault();
    }
  };

  /**
   * Arrow keys on a row: up and down move to the previous or next row (a function's name, a
   * folded run, a variant, an event), Home and End to the first and last; right opens and left
   * closes what the row holds (a function, a folded run, an event's details).
   */
  private _navigate(ev: KeyboardEvent, t: HTMLElement): boolean {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || !t.matches?.(ROWS)) {
      return false;
    }
    const rows = Array.from(this._body.querySelectorAll(ROWS)) as HTMLElement[];
    const i = rows.indexOf(t);
    if (i < 0) {
      return false;
    }
    let next: HTMLElement | undefined;
    switch (ev.key) {
      case 'ArrowDown':
        next = rows[Math.min(rows.length - 1, i + 1)];
        break;
      case 'ArrowUp':
        next = rows[Math.max(0, i - 1)];
        break;
      case 'Home':
        next = rows[0];
        break;
      case 'End':
        next = rows[rows.length - 1];
        break;
      case 'ArrowRight':
      case 'ArrowLeft': {
        const open = ev.key === 'ArrowRight';
        if (t.classList.contains('jp-JitPanel-functionName')) {
          const key =
            t.closest('.jp-JitPanel-function')?.getAttribute('data-key') ?? '';
          this._toggleFunction(key, open);
          const name = this._body.querySelector(
            `.jp-JitPanel-function[data-key="${css(key)}"] .jp-JitPanel-functionName`
          ) as HTMLElement | null;
          name?.focus({ preventScroll: true });
        } else if (t.dataset.fold) {
          this._toggleFold(t.dataset.fold, open);
        } else if (t.classList.contains('jp-JitPanel-event') && t.dataset.key) {
          this._toggleEvent(t.dataset.key, open);
        } else {
          return false;
        }
        return true;
      }
      default:
        return false;
    }
    next?.focus({ preventScroll: true });
    next?.scrollIntoView?.({ block: 'nearest' });
    return true;
  }

  private _model: JitModel | null = null;
  private _sourceNode = el('span', 'jp-JitPanel-source');
  private _search = document.createElement('input');
  private _kind = document.createElement('select');
  private _kindList = '';
  private _body = el('div', 'jp-JitPanel-main');
  private _root = el('div', 'jp-JitPanel-body');
  private _top = el('div', 'jp-JitPanel-top');
  private _functions = el('div', 'jp-JitPanel-functions');
  private _bottom = el('div', 'jp-JitPanel-bottom');
  private _openEvent: string | null = null;
  private _feedFocus = '';
  private _collapsed = new Set<string>();
  private _unfolded = new Set<string>();
  private _byWorker = false;
  private _code = new Map<string, ICodeState>();
  private _profiles = new Map<string, IProfileState>();
  private _cards = new Map<string, { signature: string; node: HTMLElement }>();
  private _selected: { key: string; variant: number | null } | null = null;
  private _frame = 0;
  private _pendingSince = 0;
  private _diffTimer = 0;
}

function workersOf(f: IFunctionInfo): IWorkerVariants[] {
  return Array.isArray(f.workers) ? f.workers.filter(Boolean) : [];
}

/**
 * The workers' variants of a function, one row per key folded over the workers: how many
 * workers have it and how many loaded it from the disk cache; the workers in the tooltip.
 */
export function renderWorkers(groups: IWorkerVariants[]): HTMLElement {
  const box = el('div', 'jp-JitPanel-workers');
  box.append(el('div', 'jp-JitPanel-workersHead', 'on the workers'));
  for (const g of groups) {
    const row = el('div', 'jp-JitPanel-variant jp-JitPanel-workerVariant');
    const head = el('div', 'jp-JitPanel-variantHead');
    const st = statics(g.statics);
    if (st) {
      const node = el('span', 'jp-JitPanel-statics', readable(st));
      node.title = st;
      head.append(node);
    }
    head.append(el('span', 'jp-JitPanel-signature', g.signature || ''));
    const stats = el('div', 'jp-JitPanel-variantStats');
    const summary = stat(
      'workers',
      g.summary || plural((g.workers || []).length, 'worker')
    );
    summary.title = (g.workers || [])
      .map(w =>
        (g.loaded || []).includes(w)
          ? `${w}: loaded from the disk cache`
          : `${w}: compiled`
      )
      .join('\n');
    stats.append(
      summary,
      stat('compile', `compile ${ms(g.compile_ms)}`),
      stat(
        'calls',
        callsText(
          typeof g.calls === 'number' ? g.calls : null,
          null,
          g.run_ms_total
        )
      )
    );
    row.append(head, stats);
    if (g.reason) {
      row.append(reasonNode(g.reason));
    }
    box.append(row);
  }
  return box;
}

function variantsOf(f: IFunctionInfo): IVariantInfo[] {
  return Array.isArray(f.variants) ? f.variants.filter(Boolean) : [];
}

/** A folded run is known by its function, its argument and its first variant. */
function foldKey(key: string, group: IVariantGroup): string {
  return `${key}|${group.arg}|${group.variants[0]?.variant ?? ''}`;
}

/** A User Timing entry (DevTools' performance panel; the browser test reads them). */
function measure(name: string, start: number, end: number): void {
  try {
    performance.measure(name, { start, end });
  } catch {
    // older engines (and jsdom) without measure options: the figure is optional
  }
}

function css(value: string): string {
  return value.replace(/["\\]/g, '\\$&');
}

/** A CSS selector that finds the same control after a re-render. */
function focusSignature(node: HTMLElement): string | null {
  const fn = node.closest('.jp-JitPanel-function') as HTMLElement | null;
  const scope = fn
    ? `.jp-JitPanel-function[data-key="${css(fn.dataset.key ?? '')}"] `
    : '';
  if (node.classList.contains('jp-JitPanel-event') && node.dataset.key) {
    return `.jp-JitPanel-event[data-key="${css(node.dataset.key)}"]`;
  }
  if (node.dataset.fold) {
    return `.jp-JitPanel-fold[data-fold="${css(node.dataset.fold)}"]`;
  }
  if (node.classList.contains('jp-JitPanel-variant')) {
    return `${scope}.jp-JitPanel-variant[data-variant="${css(node.dataset.variant ?? '')}"]`;
  }
  if (node.dataset.action) {
    const v = node.closest('.jp-JitPanel-variant') as HTMLElement | null;
    const vs = v
      ? `.jp-JitPanel-variant[data-variant="${css(v.dataset.variant ?? '')}"] `
      : '';
    const view = node.dataset.view ? `[data-view="${node.dataset.view}"]` : '';
    const cls = node.classList.contains('jp-JitPanel-where')
      ? '.jp-JitPanel-where'
      : '';
    return `${scope}${vs}[data-action="${node.dataset.action}"]${view}${cls}`;
  }
  return null;
}

/**
 * A function's name that wraps after `_` and `.` (`exponentially_⏎weighted_moving_average`),
 * never mid-word unless a single part is wider than the panel.
 */
function nameText(name: string): HTMLElement {
  const span = el('span', 'jp-JitPanel-nameText');
  name.split(/(?<=[_.])/).forEach((part, i) => {
    if (i) {
      span.append(document.createElement('wbr'));
    }
    span.append(document.createTextNode(part));
  });
  return span;
}

function codeNode(open: ICodeState): HTMLElement {
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
  return pre;
}

/** "profile": the kernel runs the variant's instrumented twin on its first call's inputs. */
function profileButton(v: IVariantInfo, open: boolean): HTMLButtonElement {
  const b = button(
    'profile',
    'profile',
    "Profile this variant on the inputs of its first call: the source with each line's " +
      'share of the time, and what bounds it'
  );
  b.setAttribute('aria-pressed', String(open));
  if (v.profilable === false) {
    b.disabled = true;
    b.title =
      "The inputs of this variant's first call were not kept (too large, or dropped for " +
      'newer variants): run %jit_profile in a cell instead';
  }
  return b;
}

function reasonNode(text: string): HTMLElement {
  const r = el('div', 'jp-JitPanel-reason');
  for (const run of reasonRuns(readable(text))) {
    r.append(
      run.keep
        ? el('span', 'jp-JitPanel-keep', run.text)
        : document.createTextNode(run.text)
    );
  }
  r.title = text;
  return r;
}

function stat(name: string, text: string): HTMLElement {
  const s = el('span', 'jp-JitPanel-stat', text);
  s.dataset.stat = name;
  return s;
}

function button(
  text: string,
  action: string,
  label: string
): HTMLButtonElement {
  const b = el('button', 'jp-JitPanel-button', text);
  b.type = 'button';
  b.dataset.action = action;
  b.title = label;
  b.setAttribute('aria-label', label);
  return b;
}

function renderDetails(e: IJitEvent): HTMLElement {
  const box = el('div', 'jp-JitPanel-details');
  box.append(keyValues(eventFacts(e)));
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
  const timings =
    e.timings_ms && typeof e.timings_ms === 'object' ? e.timings_ms : {};
  const phases = Object.keys(timings);
  if (phases.length) {
    box.append(el('div', 'jp-JitPanel-detailsHead', 'Phase timings'));
    box.append(
      keyValues(phases.map(p => [p.replace(/_/g, ' '), ms(timings[p])]))
    );
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

function countNode(
  label: string,
  one: string,
  n: number,
  many?: string
): HTMLElement {
  const c = el('span', 'jp-JitPanel-count');
  c.dataset.count = label;
  c.append(
    el('b', '', String(n)),
    document.createTextNode(` ${n === 1 ? one : (many ?? label)}`)
  );
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
