/**
 * JitModel: what the panel and the status item know about one kernel.
 *
 * It is fed kernel messages (`handle`) and knows nothing about comms or DOM,
 * so it is unit-tested on plain objects. A snapshot is authoritative; events
 * arriving between snapshots (while a cell runs) update the counts and the
 * variant table right away.
 */
import { ISignal, Signal } from '@lumino/signaling';

import {
  IFunctionInfo,
  IJitEvent,
  ISnapshot,
  IVariantInfo,
  KernelMessage
} from './protocol';

/** Where the model's kernel stands with jitmagic. */
export type ConnectionState =
  | 'no-kernel' // the notebook has no kernel
  | 'waiting' // a kernel, but jitmagic is not loaded in it (yet)
  | 'connected'; // a comm is open and streaming

export class JitModel {
  constructor(options: { maxEvents?: number } = {}) {
    this.maxEvents = options.maxEvents ?? 500;
  }

  readonly maxEvents: number;
  functions: IFunctionInfo[] = [];
  /** Oldest first; at most `maxEvents`. */
  events: IJitEvent[] = [];
  compiles = 0;
  misses = 0;
  evictions = 0;
  state: ConnectionState = 'no-kernel';
  /** A human line about the last reset or kernel error, if any. */
  note = '';
  kernelVersion = '';
  /** the kernel's id, as it reported it: live dashboards find their model by it */
  kernelId = '';
  /** (unix time, cumulative run ms of the live variants), one per snapshot that changed it */
  samples: [number, number][] = [];
  /** per function key: the argument its last recompilation storm blamed */
  storms = new Map<string, string>();

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Apply one message from the kernel. Unknown messages are ignored. */
  handle(msg: Partial<KernelMessage> | null | undefined): void {
    if (!msg || typeof msg !== 'object') {
      return;
    }
    switch (msg.type) {
      case 'hello':
        this.kernelVersion = String((msg as any).version ?? '');
        this.kernelId = String((msg as any).kernel_id ?? '');
        this.setState('connected');
        return;
      case 'event':
        this.addEvent((msg as any).event);
        return;
      case 'events': {
        // the backlog sent on subscribe, or a batch of a busy moment (a storm): one change
        const events = (msg as any).events;
        this.addEvents(
          Array.isArray(events) ? events : [],
          (msg as any).counts
        );
        return;
      }
      case 'snapshot':
        this.applySnapshot((msg as any).snapshot);
        return;
      case 'bye':
        this.setState('waiting', 'jitmagic was unloaded');
        return;
    }
  }

  setState(state: ConnectionState, note = ''): void {
    this.state = state;
    this.note = note;
    this._changed.emit();
  }

  /** Forget everything (kernel restart, kernel change). */
  reset(state: ConnectionState, note = ''): void {
    this.functions = [];
    this.events = [];
    this.compiles = this.misses = this.evictions = 0;
    this.samples = [];
    this.storms.clear();
    this._seen.clear();
    this.setState(state, note);
  }

  applySnapshot(s: ISnapshot | null | undefined): void {
    if (!s || typeof s !== 'object') {
      return;
    }
    // a copy: events update variants in place, and the caller's records must stay as sent
    this.functions = Array.isArray(s.functions)
      ? JSON.parse(JSON.stringify(s.functions))
      : [];
    this.compiles = num(s.compiles, this.compiles);
    this.misses = num(s.misses, this.misses);
    this.evictions = num(s.evictions, this.evictions);
    const total = this.functions.reduce(
      (acc, f) =>
        acc +
        (Array.isArray(f?.variants) ? f.variants : []).reduce(
          (a, v) =>
            a + (typeof v?.run_ms_total === 'number' ? v.run_ms_total : 0),
          0
        ),
      0
    );
    const last = this.samples[this.samples.length - 1];
    if (!last || last[1] !== total) {
      this.samples.push([Date.now() / 1000, total]);
      this.samples.splice(0, Math.max(0, this.samples.length - 2000));
    }
    this.state = 'connected';
    this.note = s.error ? `snapshot failed: ${s.error}` : '';
    this._changed.emit();
  }

  /**
   * Apply many events with one change. `counts`, when the kernel sends them with a batch,
   * are its own totals: the batch may have left out events (the kernel keeps only the newest
   * of a burst), and the totals still count them.
   */
  addEvents(
    events: (IJitEvent | null | undefined)[],
    counts?: { compiles?: number; misses?: number; evictions?: number } | null
  ): void {
    this._quiet = true;
    try {
      events.forEach(e => this.addEvent(e));
    } finally {
      this._quiet = false;
    }
    if (counts && typeof counts === 'object') {
      this.compiles = num(counts.compiles, this.compiles);
      this.misses = num(counts.misses, this.misses);
      this.evictions = num(counts.evictions, this.evictions);
    }
    this.state = 'connected';
    this._changed.emit();
  }

  addEvent(e: IJitEvent | null | undefined): void {
    if (!e || typeof e !== 'object') {
      return;
    }
    if (typeof e.seq === 'number') {
      if (this._seen.has(e.seq)) {
        return; // the same event through a second comm
      }
      this._seen.add(e.seq);
    }
    this.events.push(e);
    if (this.events.length > this.maxEvents) {
      const dropped = this.events.splice(
        0,
        this.events.length - this.maxEvents
      );
      dropped.forEach(
        d => typeof d.seq === 'number' && this._seen.delete(d.seq)
      );
    }
    // a first compile is a 'compile', a recompile a 'miss': both compile a variant
    switch (e.kind) {
      case 'compile':
        this.compiles += 1;
        this.upsertVariant(e);
        break;
      case 'miss':
        this.compiles += 1;
        this.misses += 1;
        this.upsertVariant(e);
        break;
      case 'evict':
        this.evictions += 1;
        this.removeVariant(e);
        break;
      case 'storm': {
        const arg = stormArgument(e);
        if (arg) {
          this.storms.set(functionKey(e), arg);
        }
        break;
      }
    }
    this.state = 'connected';
    if (!this._quiet) {
      this._changed.emit();
    }
  }

  /** The event with this seq, if still in the feed. */
  eventBySeq(seq: number): IJitEvent | undefined {
    return this.events.find(e => e.seq === seq);
  }

  variantCount(name: string): number {
    const f = this.functions.find(f => f.qualname === name || f.name === name);
    return f?.variants?.length ?? 0;
  }

  private findFunction(
    e: IJitEvent,
    create: boolean
  ): IFunctionInfo | undefined {
    const key = e.qualname || e.function;
    let f = this.functions.find(f =>
      e.fid !== undefined && f.fid !== undefined
        ? f.fid === e.fid
        : (f.qualname || f.name) === key &&
          (!e.where || !f.where || f.where === e.where)
    );
    if (!f && create && key) {
      f = {
        fid: e.fid,
        backend: e.backend,
        name: e.function ?? key,
        qualname: e.qualname ?? key,
        where: e.where,
        variants: []
      };
      this.functions = [...this.functions, f];
    }
    return f;
  }

  private upsertVariant(e: IJitEvent): void {
    const f = this.findFunction(e, true);
    if (!f) {
      return;
    }
    const variants = (f.variants = f.variants ?? []);
    const reason = (e.reasons ?? [])
      .map(r => r.text)
      .filter(Boolean)
      .join('; ');
    const fresh: IVariantInfo = {
      variant: e.variant ?? null,
      statics: e.statics ?? {},
      signature: e.signature ?? '',
      compile_ms: e.timings_ms?.total ?? null,
      last_reason: reason || null
    };
    const i =
      e.variant === null || e.variant === undefined
        ? -1
        : variants.findIndex(v => v.variant === e.variant);
    if (i >= 0) {
      variants[i] = { ...variants[i], ...fresh };
    } else {
      variants.push({ ...fresh, calls: 0, run_ms_total: 0, run_ms_mean: null });
    }
  }

  private removeVariant(e: IJitEvent): void {
    const f = this.findFunction(e, false);
    if (!f || !f.variants) {
      return;
    }
    // no variant id: the whole cache of the function was cleared
    f.variants =
      e.variant === null || e.variant === undefined
        ? []
        : f.variants.filter(v => v.variant !== e.variant);
  }

  private _seen = new Set<number>();
  private _quiet = false;
  private _changed = new Signal<this, void>(this);
}

/** How events and functions are matched: the function id when known, else its name. */
export function functionKey(f: {
  fid?: number | null;
  qualname?: string;
  name?: string;
  function?: string;
}): string {
  return f.fid !== undefined && f.fid !== null
    ? `#${f.fid}`
    : f.qualname || f.name || f.function || '?';
}

/** The argument a storm event blames: its first reason with an argument, else its message. */
export function stormArgument(e: IJitEvent): string {
  for (const r of Array.isArray(e.reasons) ? e.reasons : []) {
    if (r && r.arg) {
      return String(r.arg);
    }
  }
  const m = /(?:argument|global) '([^']+)'/.exec(e.message ?? '');
  return m ? m[1] : '';
}

function num(v: unknown, fallback: number): number {
  return typeof v === 'number' && isFinite(v) ? v : fallback;
}
