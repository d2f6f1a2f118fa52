/** Pure text formatting shared by the panel, the status item and the dashboard. */
import { IJitEvent, IReason, IVariantInfo } from './protocol';

export function plural(n: number, word: string, many?: string): string {
  return `${n} ${n === 1 ? word : (many ?? word + 's')}`;
}

/** `JIT 5 compiles, 3 of them recompiles`: every compile counts, a recompile is a miss. */
export function statusText(compiles: number, misses: number): string {
  const head = `JIT ${plural(compiles, 'compile')}`;
  if (!misses) {
    return head;
  }
  return `${head}, ${misses} of them ${misses === 1 ? 'a recompile' : 'recompiles'}`;
}

/** `cell In[2]:4` -> `In[2]:4`; other locations unchanged. */
export function location(where: string | undefined | null): string {
  if (!where) {
    return '';
  }
  return where.replace(/^cell (In\[\d+\]:\d+)$/, '$1');
}

/** The execution count of the cell a location names (`In[2]:4` -> 2), if any. */
export function cellNumber(where: string | undefined | null): number | null {
  const m = /In\[(\d+)\]/.exec(where ?? '');
  return m ? Number(m[1]) : null;
}

/** The longest `old -> new` kept on one line (about 200 px of code font). */
const KEEP_MAX = 28;

/**
 * `0.009371372050021` -> `0.00937137` inside any text: static values and reasons quote floats
 * at full precision, which no one reads and a narrow panel cannot hold.
 */
export function readable(text: string): string {
  return text.replace(/(?<![\w.])-?\d+\.\d{7,}(?:e[-+]?\d+)?(?![\w.])/g, m =>
    String(Number(Number(m).toPrecision(6)))
  );
}

/**
 * Split a reason into text and unbreakable `old -> new` runs, so that a narrow panel
 * wraps between words but never inside `1 -> 2`.
 */
export function reasonRuns(text: string): { text: string; keep: boolean }[] {
  const out: { text: string; keep: boolean }[] = [];
  const re = /\S+ -> \S+/g;
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    if (m[0].length > KEEP_MAX) {
      continue; // wider than a narrow panel: better broken than past the edge
    }
    if (m.index > last) {
      out.push({ text: text.slice(last, m.index), keep: false });
    }
    out.push({ text: m[0], keep: true });
    last = m.index + m[0].length;
  }
  if (last < text.length) {
    out.push({ text: text.slice(last), keep: false });
  }
  return out;
}

/** One call reads as one number; more as count, mean and total. */
export function callsText(
  calls: number | null | undefined,
  meanMs?: number | null,
  totalMs?: number | null
): string {
  if (typeof calls !== 'number') {
    return 'calls –';
  }
  if (calls === 0) {
    return 'not called yet';
  }
  if (calls === 1) {
    return `1 call · ${ms(totalMs ?? meanMs)}`;
  }
  return `${calls} calls · ${ms(meanMs)} mean · ${ms(totalMs)} total`;
}

/** Speedup over NumPy and break-even, as the kernel measured them (– when it did not). */
export function payoffText(
  speedup: number | null | undefined,
  breakEven: number | null | undefined
): string {
  if (typeof speedup !== 'number' || !isFinite(speedup)) {
    return '';
  }
  const x = `${speedup >= 10 ? speedup.toFixed(0) : speedup.toFixed(2)}x NumPy`;
  if (speedup <= 1) {
    return `${x} · never pays off`;
  }
  return typeof breakEven === 'number'
    ? `${x} · pays off after ${plural(breakEven, 'call')}`
    : x;
}

/** About `count` round tick values covering [lo, hi] (1, 2 or 5 times a power of ten). */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!isFinite(lo) || !isFinite(hi)) {
    return [];
  }
  if (hi <= lo) {
    return [lo];
  }
  const raw = (hi - lo) / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    out.push(Number(t.toPrecision(12)));
  }
  return out;
}

/** Powers of ten covering [lo, hi] (both > 0). */
export function logTicks(lo: number, hi: number): number[] {
  if (!(lo > 0) || !(hi > 0)) {
    return [];
  }
  const out: number[] = [];
  for (
    let e = Math.floor(Math.log10(lo));
    e <= Math.ceil(Math.log10(hi));
    e++
  ) {
    out.push(Math.pow(10, e));
  }
  return out;
}

/**
 * A short count: 950, 1.2k, 35k, 150k, 1.2M, 150M, 2.5G. Never exponent notation
 * (`toPrecision(2)` writes 150000 as `1.5e+2k`): one decimal below 10, whole units above.
 */
export function count(n: number): string {
  if (!isFinite(n)) {
    return '–';
  }
  const sign = n < 0 ? '-' : '';
  const a = Math.abs(n);
  if (a < 1e3) {
    return sign + String(Math.round(a * 100) / 100);
  }
  const units: [number, string][] = [
    [1e3, 'k'],
    [1e6, 'M'],
    [1e9, 'G'],
    [1e12, 'T']
  ];
  for (let i = 0; i < units.length; i++) {
    const [size, unit] = units[i];
    const x = a / size;
    const text =
      x < 9.95 ? x.toFixed(1).replace(/\.0$/, '') : String(Math.round(x));
    // 999,600 rounds to 1000k: that is 1M
    if (Number(text) < 1000 || i === units.length - 1) {
      return `${sign}${text}${unit}`;
    }
  }
  return sign + String(a); // unreachable: the last unit always returns
}

/** Milliseconds in the unit that reads best: `1.25 s`, `96.3 ms`, `4.37 µs`, `80.0 ns`. */
export function ms(value: number | null | undefined): string {
  if (value === null || value === undefined || !isFinite(value)) {
    return '–';
  }
  if (value === 0) {
    return '0 ms';
  }
  if (value >= 1000) {
    return `${fixed(value / 1000)} s`;
  }
  if (value >= 1) {
    return `${fixed(value)} ms`;
  }
  if (value >= 0.001) {
    return `${fixed(value * 1e3)} µs`;
  }
  return `${fixed(value * 1e6)} ns`;
}

function fixed(x: number): string {
  return x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2);
}

/** `{n: '3', mode: "'fast'"}` -> `n=3, mode='fast'`; empty -> `` */
export function statics(
  values: { [name: string]: string } | undefined
): string {
  if (!values || typeof values !== 'object') {
    return '';
  }
  return Object.keys(values)
    .map(k => `${k}=${values[k]}`)
    .join(', ');
}

export function reasonText(r: IReason | undefined): string {
  if (!r) {
    return '';
  }
  if (r.text) {
    return r.text;
  }
  const what = r.arg ? `${r.arg}: ` : '';
  if (r.old !== undefined || r.new !== undefined) {
    return `${what}${r.old ?? '?'} → ${r.new ?? '?'}`;
  }
  return `${what}${r.kind ?? ''}`;
}

/** The one line an event shows in a feed: its message, else its first reason. */
export function eventLine(e: IJitEvent): string {
  if (e.message) {
    return e.message;
  }
  const reason = (e.reasons ?? []).map(reasonText).filter(Boolean).join('; ');
  const name = e.qualname || e.function || '?';
  return reason ? `${name}: ${reason}` : `${e.kind ?? 'event'} ${name}`;
}

export function clock(time: number | undefined): string {
  if (time === undefined || !isFinite(time)) {
    return '';
  }
  const d = new Date(time * 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** `speedup 0.23x · break-even never`, the figures %jit_cache shows (bounds keep their ≥/≤). */
export function figuresText(v: IVariantInfo): string {
  const be = v.break_even_text || '–';
  return `speedup ${v.speedup_text || '–'} · break-even ${be}${callsUnit(be)}`;
}

/** How each figure was measured, one line each (tooltips). */
export function figuresHow(v: IVariantInfo): string[] {
  return [
    `call: ${ms(v.call_ms)} (${v.call_how || 'not measured'})`,
    `NumPy: ${v.eager_text || '–'} (${v.eager_how || 'not measured'})`,
    `kernel: ${ms(v.kernel_ms_median)} (${v.kernel_how || 'native timer, no dispatch'})`
  ];
}

/** The unit after a break-even figure as the kernel wrote it (`1`, `≤ 1`, `130`, `never`). */
export function callsUnit(figure: string): string {
  if (!/\d/.test(figure)) {
    return '';
  }
  return /^\D*1$/.test(figure.trim()) ? ' call' : ' calls';
}

/**
 * `exponentially_weighted_moving_average` in 20 characters: `exponent…ng_average`. The
 * middle goes, so both the start (what it is) and the end (which one) survive.
 */
export function clipMiddle(text: string, max: number): string {
  if (text.length <= max) {
    return text;
  }
  if (max <= 1) {
    return '…';
  }
  const head = Math.ceil((max - 1) / 2);
  const tail = max - 1 - head;
  return (
    text.slice(0, head) + '…' + (tail ? text.slice(text.length - tail) : '')
  );
}

/**
 * A variant's label in at most `max` characters: `name #3 dt=0.1`. The variant number is kept
 * whole (without it every row of a long-named function reads the same); the name and the
 * static values give up their middles.
 */
export function variantLabel(
  name: string,
  variant: number | string | null | undefined,
  staticsText = '',
  max = 30
): string {
  const id = ` #${variant ?? '?'}`;
  const st = staticsText ? ` ${staticsText}` : '';
  if (name.length + id.length + st.length <= max) {
    return `${name}${id}${st}`;
  }
  // the name keeps at least 12 characters; the statics get what is left, if anything useful
  const nameRoom = Math.max(12, max - id.length - Math.min(st.length, 12));
  const shortName = clipMiddle(name, nameRoom);
  const room = max - shortName.length - id.length;
  const shortSt = room >= 5 && st ? ' ' + clipMiddle(st.trim(), room - 1) : '';
  return `${shortName}${id}${shortSt}`;
}

/** The tooltip of a signature: what its `~` means, when it has one. */
export function signatureTip(signature: string): string {
  if (!signature.includes('~')) {
    return signature;
  }
  return (
    `${signature}\n~ marks a weak type: a Python scalar (int, float, complex) whose ` +
    'dtype gives way to the arrays it meets, as in JAX'
  );
}

/** The compiled code's optimisation tier, as the snapshot numbers it (tiering.py). */
export function tierName(tier: unknown): string {
  const names: { [t: number]: string } = { 0: 'quick', 1: 'light', 2: 'O3' };
  return typeof tier === 'number' ? (names[tier] ?? `tier ${tier}`) : '';
}
