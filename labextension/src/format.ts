/** Pure text formatting shared by the panel, the status item and the dashboard. */
import { IJitEvent, IReason, IVariantInfo } from './protocol';

export function plural(n: number, word: string, many?: string): string {
  return `${n} ${n === 1 ? word : many ?? word + 's'}`;
}

/** `JIT 12 compiles · 3 misses` */
export function statusText(compiles: number, misses: number): string {
  return `JIT ${plural(compiles, 'compile')} · ${plural(misses, 'miss', 'misses')}`;
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
export function statics(values: { [name: string]: string } | undefined): string {
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
  return `speedup ${v.speedup_text || '–'} · break-even ${be}${
    be === 'never' || be === '–' ? '' : ' calls'
  }`;
}

/** How each figure was measured, one line each (tooltips). */
export function figuresHow(v: IVariantInfo): string[] {
  return [
    `call: ${ms(v.call_ms)} (${v.call_how || 'not measured'})`,
    `NumPy: ${v.eager_text || '–'} (${v.eager_how || 'not measured'})`,
    `kernel: ${ms(v.kernel_ms_median)} (${v.kernel_how || 'native timer, no dispatch'})`
  ];
}
