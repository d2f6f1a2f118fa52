/**
 * What the event feed shows of a record, for any kind of record. The kernel adds kinds
 * (tier_up, tier_down, profile, ...) and fields (a worker process's `worker`) faster than the
 * panel is released, so nothing here lists what a kind must contain: known fields are shown
 * in a known order and form, and every other field is shown as `name value`, its unit taken
 * from its name (`_ms`, `_us`).
 */
import { count, eventLine, location, ms, statics } from './format';
import { functionKey } from './model';
import { IJitEvent } from './protocol';

/** The kinds the filter always offers; any other kind is added when an event of it arrives. */
export const KNOWN_KINDS = [
  'compile',
  'miss',
  'generalise',
  'generalise_failed',
  'tier_up',
  'tier_down',
  'evict',
  'storm',
  'error',
  'disk_hit',
  'disk_miss',
  'warning',
  'profile'
];

/** Kinds that churn during a storm: consecutive ones of one function fold into one row. */
const CHURN = new Set(['miss', 'evict']);

/** Fields shown in their own place (the feed line, the facts table, the phase table). */
const PLACED = new Set([
  'seq',
  'fid',
  'time',
  'kind',
  'function',
  'qualname',
  'backend',
  'worker',
  'where',
  'variant',
  'statics',
  'signature',
  'message',
  'reasons',
  'timings_ms'
]);

/** The filter's kinds: the known ones, then any other kind seen, in order of arrival. */
export function filterKinds(events: IJitEvent[]): string[] {
  const out = KNOWN_KINDS.slice();
  for (const e of events) {
    const k = e && typeof e.kind === 'string' ? e.kind : '';
    if (k && !out.includes(k)) {
      out.push(k);
    }
  }
  return out;
}

/** `worker 3`, or the worker's own name; '' for the kernel's own process. */
export function workerLabel(e: IJitEvent): string {
  const w = (e as { worker?: unknown }).worker;
  if (w === undefined || w === null || w === '') {
    return '';
  }
  return typeof w === 'number' ? `worker ${w}` : String(w);
}

/** One row of the event feed: a single event, or a run of one function's recompiles. */
export interface IFeedItem {
  /** newest first */
  events: IJitEvent[];
  key: string;
}

/** Newest first; consecutive misses and evictions of one function (and worker) fold. */
export function feedItems(events: IJitEvent[]): IFeedItem[] {
  const out: IFeedItem[] = [];
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    const prev = out[out.length - 1];
    if (
      prev &&
      CHURN.has(String(e.kind)) &&
      CHURN.has(String(prev.events[0].kind)) &&
      functionKey(prev.events[0]) === functionKey(e) &&
      workerLabel(prev.events[0]) === workerLabel(e)
    ) {
      prev.events.push(e);
      continue;
    }
    out.push({ events: [e], key: String(e.seq ?? `i${i}`) });
  }
  return out;
}

/** Feed items by worker: the kernel's own process first, then each worker in order seen. */
export function byWorker(
  items: IFeedItem[]
): { worker: string; items: IFeedItem[] }[] {
  const groups = new Map<string, IFeedItem[]>([['', []]]);
  for (const item of items) {
    const w = workerLabel(item.events[0]);
    if (!groups.has(w)) {
      groups.set(w, []);
    }
    groups.get(w)!.push(item);
  }
  return Array.from(groups, ([worker, list]) => ({
    worker,
    items: list
  })).filter(g => g.items.length);
}

/** The feed line of one item: a folded run counts its kinds and quotes the latest reason. */
export function itemLine(item: IFeedItem): string {
  const e = item.events[0];
  if (item.events.length === 1) {
    return feedLine(e);
  }
  const misses = item.events.filter(x => x.kind === 'miss');
  const evicts = item.events.length - misses.length;
  const parts = [];
  if (misses.length) {
    parts.push(
      `${count(misses.length)} ${misses.length === 1 ? 'recompile' : 'recompiles'}`
    );
  }
  if (evicts) {
    parts.push(`${count(evicts)} ${evicts === 1 ? 'eviction' : 'evictions'}`);
  }
  const latest = misses[0] ?? e;
  const why =
    (latest.reasons ?? [])
      .map(r => r?.text)
      .filter(Boolean)
      .join('; ') ||
    latest.message ||
    '';
  return `${e.qualname || e.function || '?'}: ${parts.join(', ')}${why ? ` (latest: ${why})` : ''}`;
}

/**
 * One event's line: its message, else its reasons; a record with neither (a new kind) names
 * its kind and function and its first few other fields, so it never reads as a bare `event`.
 */
export function feedLine(e: IJitEvent): string {
  const line = eventLine(e);
  if (e.message || (e.reasons ?? []).some(r => r && (r.text || r.kind))) {
    return line;
  }
  const extra = extraFacts(e)
    .slice(0, 3)
    .map(([k, v]) => `${k} ${v}`);
  return extra.length ? `${line} · ${extra.join(' · ')}` : line;
}

/** Every fact of an event for its details: the known ones first, then whatever else it has. */
export function eventFacts(e: IJitEvent): [string, string][] {
  const rows: [string, string][] = [
    ['function', e.qualname || e.function || '']
  ];
  if (e.backend && e.backend !== 'jitmagic') {
    rows.push(['backend', e.backend]);
  }
  const worker = workerLabel(e);
  if (worker) {
    rows.push(['worker', worker]);
  }
  rows.push(['where', location(e.where)]);
  if (e.variant !== null && e.variant !== undefined) {
    rows.push(['variant', String(e.variant)]);
  }
  const st = statics(e.statics);
  if (st) {
    rows.push(['static', st]);
  }
  if (e.signature) {
    rows.push(['signature', e.signature]);
  }
  if (e.message) {
    rows.push(['message', e.message]);
  }
  return rows.concat(extraFacts(e)).filter(([, v]) => v !== '');
}

/** The fields of an event that have no place of their own, formatted by their names. */
export function extraFacts(e: IJitEvent): [string, string][] {
  const rows: [string, string][] = [];
  const record = e as { [k: string]: unknown };
  for (const key of Object.keys(record)) {
    if (!PLACED.has(key)) {
      rows.push(...fieldFacts(key, record[key]));
    }
  }
  return rows;
}

/**
 * `run_us: {before: 0.04, calls_before: 200}` -> [`run before`, `40.0 ns`],
 * [`run calls before`, `200`]. Objects open one level; empty values are left out.
 */
export function fieldFacts(
  key: string,
  value: unknown,
  unit = ''
): [string, string][] {
  if (value === null || value === undefined || value === '') {
    return [];
  }
  const own = /_(ms|us|s)$/.exec(key);
  const u = own ? own[1] : unit;
  const label = key.replace(/_(ms|us|s)$/, '').replace(/_/g, ' ');
  if (Array.isArray(value)) {
    const flat = value.filter(v => v !== null && v !== undefined);
    if (!flat.length) {
      return [];
    }
    if (flat.every(v => typeof v !== 'object')) {
      return [[label, flat.map(v => scalarText(key, v, u)).join(', ')]];
    }
    return [[label, JSON.stringify(flat)]];
  }
  if (typeof value === 'object') {
    const obj = value as { [k: string]: unknown };
    const rows: [string, string][] = [];
    for (const k of Object.keys(obj)) {
      for (const [l, v] of fieldFacts(k, obj[k], u)) {
        rows.push([`${label} ${l}`, v]);
      }
    }
    return rows;
  }
  return [[label, scalarText(key, value, u)]];
}

function scalarText(key: string, v: unknown, unit: string): string {
  if (typeof v !== 'number') {
    return String(v);
  }
  if (!isFinite(v)) {
    return '–';
  }
  // a count inside a timed record (`calls_before` in `run_us`) is not a time
  if (/calls|count|^n_|samples/.test(key)) {
    return Number.isInteger(v) ? count(v) : v.toPrecision(3);
  }
  if (unit === 'ms') {
    return ms(v);
  }
  if (unit === 'us') {
    return ms(v / 1e3);
  }
  if (unit === 's') {
    return ms(v * 1e3);
  }
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4)));
}
