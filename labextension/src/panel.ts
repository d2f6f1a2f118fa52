/**
 * JitPanel: the "JIT" side panel, a view over the JitModel of the active notebook.
 */
import { Widget } from '@lumino/widgets';

import { clock, eventLine, figuresHow, figuresText, ms, plural, statics } from './format';
import { JitModel } from './model';
import { IFunctionInfo, IJitEvent } from './protocol';

export class JitPanel extends Widget {
  constructor() {
    super();
    this.id = 'jitmagic-panel';
    this.addClass('jp-JitPanel');
    this.title.caption = 'JIT: compilations of the active notebook';
    this.node.tabIndex = 0;
    this.node.addEventListener('click', this._onClick);
    this._render();
  }

  /** The notebook being shown, e.g. `analysis.ipynb`. */
  set source(label: string) {
    this._source = label;
    this._schedule();
  }

  /** Called when the user asks for fresh numbers. */
  onRefresh: (() => void) | null = null;

  get model(): JitModel | null {
    return this._model;
  }

  set model(model: JitModel | null) {
    if (model === this._model) {
      return;
    }
    this._model?.changed.disconnect(this._schedule, this);
    this._model = model;
    this._selected = null;
    model?.changed.connect(this._schedule, this);
    this._schedule();
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

  private _render(): void {
    const m = this._model;
    const root = el('div', 'jp-JitPanel-body');
    const header = el('div', 'jp-JitPanel-header');
    header.append(el('span', 'jp-JitPanel-title', 'JIT'));
    header.append(el('span', 'jp-JitPanel-source', this._source || 'no notebook'));
    const refresh = el('button', 'jp-JitPanel-refresh jp-mod-styled', 'Refresh');
    refresh.dataset.action = 'refresh';
    refresh.title = 'Ask the kernel for fresh call counts and run times';
    header.append(refresh);
    root.append(header);

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
      count('misses', 'miss', m.misses),
      count('evictions', 'eviction', m.evictions)
    );
    root.append(counts);
    if (m.note) {
      root.append(el('div', 'jp-JitPanel-note', m.note));
    }

    root.append(el('h3', 'jp-JitPanel-section', 'Functions'));
    if (!m.functions.length) {
      root.append(el('div', 'jp-JitPanel-empty', 'No jitted function has run yet.'));
    }
    for (const f of m.functions) {
      root.append(renderFunction(f));
    }

    root.append(el('h3', 'jp-JitPanel-section', 'Events'));
    const feed = el('ol', 'jp-JitPanel-events');
    const events = m.events.slice().reverse(); // newest first
    if (!events.length) {
      root.append(el('div', 'jp-JitPanel-empty', 'No compile events yet.'));
    }
    events.forEach(e => {
      const li = el('li', 'jp-JitPanel-event');
      li.dataset.kind = String(e.kind ?? '');
      li.dataset.seq = String(e.seq ?? '');
      li.title = 'Click for details';
      li.append(
        el('span', 'jp-JitPanel-time', clock(e.time)),
        el('span', 'jp-JitPanel-kind', String(e.kind ?? '?')),
        el('span', 'jp-JitPanel-line', eventLine(e))
      );
      const selected = this._selected !== null && e.seq === this._selected;
      if (selected) {
        li.classList.add('jp-mod-selected');
        li.append(renderDetails(e));
      }
      feed.append(li);
    });
    root.append(feed);
    this._replace(root);
  }

  private _replace(root: HTMLElement): void {
    const scroll = this.node.scrollTop;
    this.node.replaceChildren(root);
    this.node.scrollTop = scroll;
  }

  private _onClick = (ev: MouseEvent): void => {
    const target = ev.target as HTMLElement;
    if (target.closest('[data-action="refresh"]')) {
      this.onRefresh?.();
      return;
    }
    if (target.closest('.jp-JitPanel-details')) {
      return; // selecting text in the details keeps them open
    }
    const li = target.closest('.jp-JitPanel-event') as HTMLElement | null;
    if (li && li.dataset.seq) {
      const seq = Number(li.dataset.seq);
      this._selected = this._selected === seq ? null : seq;
      this._render();
    }
  };

  private _model: JitModel | null = null;
  private _source = '';
  private _selected: number | null = null;
  private _frame = 0;
}

function renderFunction(f: IFunctionInfo): HTMLElement {
  const box = el('div', 'jp-JitPanel-function');
  const name = f.qualname || f.name || '?';
  box.dataset.name = name;
  const variants = Array.isArray(f.variants) ? f.variants : [];
  const head = el('div', 'jp-JitPanel-functionHead');
  head.append(
    el('span', 'jp-JitPanel-functionName', name),
    el('span', 'jp-JitPanel-variantCount', plural(variants.length, 'variant')),
    el('span', 'jp-JitPanel-where', f.where ?? '')
  );
  box.append(head);
  const list = el('div', 'jp-JitPanel-variants');
  for (const v of variants) {
    const row = el('div', 'jp-JitPanel-variant');
    row.dataset.variant = String(v.variant ?? '');
    const head = el('div', 'jp-JitPanel-variantHead');
    head.append(
      el('span', 'jp-JitPanel-variantId', `#${v.variant ?? '–'}`),
      el('span', 'jp-JitPanel-statics', statics(v.statics) || 'no static args'),
      el('span', 'jp-JitPanel-signature', v.signature || '')
    );
    const stats = el('div', 'jp-JitPanel-variantStats');
    const calls = typeof v.calls === 'number' ? v.calls : null;
    stats.append(
      stat('compile', `compile ${ms(v.compile_ms)}`),
      stat('calls', calls === null ? 'calls –' : plural(calls, 'call')),
      stat('run', `kernel ${ms(v.run_ms_mean)} mean · ${ms(v.run_ms_total)} total`),
      stat('figures', figuresText(v))
    );
    stats.lastElementChild?.setAttribute('title', figuresHow(v).join('\n'));
    stats.dataset.calls = String(calls ?? '');
    row.append(head, stats);
    if (v.last_reason) {
      row.append(el('div', 'jp-JitPanel-reason', v.last_reason));
    }
    list.append(row);
  }
  box.append(list);
  return box;
}

function stat(name: string, text: string): HTMLElement {
  const s = el('span', 'jp-JitPanel-stat', text);
  s.dataset.stat = name;
  return s;
}

function renderDetails(e: IJitEvent): HTMLElement {
  const box = el('div', 'jp-JitPanel-details');
  const facts: [string, string][] = [
    ['function', e.qualname || e.function || ''],
    ['where', e.where ?? ''],
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

function count(label: string, one: string, n: number): HTMLElement {
  const c = el('span', 'jp-JitPanel-count');
  c.dataset.count = label;
  c.append(el('b', '', String(n)), document.createTextNode(` ${n === 1 ? one : label}`));
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
