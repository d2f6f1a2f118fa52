/**
 * Folding a recompilation storm: the variants of one function that differ from each other in
 * one argument only (a static value, or one argument's type) become one summary row listing
 * that argument's values. Thirty near-identical cards are 6,000 px of scrolling and 150 Tab
 * stops; one row says the same thing.
 */
import { IVariantInfo } from './protocol';

/**
 * Runs shorter than this stay as they are: a few variants read fine one by one. As many as
 * the kernel's default storm threshold (8 misses), so a run folds once it is a storm.
 */
export const FOLD_MIN = 8;

/** One row of a function's variant list: a single variant, or a folded run of them. */
export interface IVariantGroup {
  variants: IVariantInfo[];
  /** the argument that changes along a folded run (`dt`, or `x` when its type changes) */
  arg?: string;
  /** its value (or type) in each variant of the run, in order */
  values?: string[];
}

/**
 * A variant spelled out as argument -> value: static values as they are, traced arguments by
 * their type (`x:f64[4]` -> x = f64[4]). Signature parts split at top-level commas only, so
 * `f64[3, 4]` stays whole.
 */
export function variantParts(v: IVariantInfo): Map<string, string> {
  const parts = new Map<string, string>();
  const st = v.statics && typeof v.statics === 'object' ? v.statics : {};
  for (const k of Object.keys(st)) {
    parts.set(k, String(st[k]));
  }
  for (const part of splitTopLevel(v.signature ?? '')) {
    const colon = part.indexOf(':');
    if (colon > 0) {
      const name = part.slice(0, colon).trim();
      // a static and a traced argument never share a name; if they did, keep both apart
      parts.set(
        parts.has(name) ? `${name}:type` : name,
        part.slice(colon + 1).trim()
      );
    } else if (part.trim()) {
      parts.set(part.trim(), '');
    }
  }
  return parts;
}

/** `a:f64[3, 4], b:i64[]` -> [`a:f64[3, 4]`, `b:i64[]`] */
export function splitTopLevel(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '[' || c === '(' || c === '{') {
      depth++;
    } else if (c === ']' || c === ')' || c === '}') {
      depth = Math.max(0, depth - 1);
    } else if (c === ',' && depth === 0) {
      out.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  if (text.slice(start).trim()) {
    out.push(text.slice(start).trim());
  }
  return out;
}

/** The one argument whose value differs between two variants, or null (none, or several). */
export function changedArgument(
  a: Map<string, string>,
  b: Map<string, string>
): string | null {
  if (a.size !== b.size) {
    return null;
  }
  let changed: string | null = null;
  for (const [k, v] of a) {
    if (!b.has(k)) {
      return null;
    }
    if (b.get(k) !== v) {
      if (changed !== null) {
        return null;
      }
      changed = k;
    }
  }
  return changed;
}

/**
 * Consecutive variants (in the kernel's order) that differ only in one argument fold into one
 * group when there are at least `min` of them; every other variant is a group of its own.
 */
export function foldVariants(
  variants: IVariantInfo[],
  min = FOLD_MIN
): IVariantGroup[] {
  const parts = variants.map(variantParts);
  const out: IVariantGroup[] = [];
  let i = 0;
  while (i < variants.length) {
    let j = i + 1;
    let arg: string | null = null;
    if (j < variants.length) {
      arg = changedArgument(parts[i], parts[j]);
    }
    if (arg !== null) {
      // extend while each next variant differs from the run's first in `arg` alone
      while (
        j < variants.length &&
        changedArgument(parts[i], parts[j]) === arg
      ) {
        j++;
      }
    }
    if (arg !== null && j - i >= min) {
      out.push({
        variants: variants.slice(i, j),
        arg,
        values: parts.slice(i, j).map(p => p.get(arg as string) ?? '')
      });
      i = j;
    } else {
      out.push({ variants: [variants[i]] });
      i++;
    }
  }
  return out;
}

/** `0.1, 0.2, 0.3, … 2.9, 3.0 (30 values)`: the first and last few values of a run. */
export function valuesText(values: string[], show = 6): string {
  if (values.length <= show) {
    return values.join(', ');
  }
  const head = Math.ceil(show / 2);
  const tail = show - head;
  return (
    `${values.slice(0, head).join(', ')}, … ${values.slice(values.length - tail).join(', ')}` +
    ` (${values.length} values)`
  );
}

/** `#3–#32`: the variant ids of a run (as a range when they are consecutive). */
export function idsText(variants: IVariantInfo[]): string {
  const ids = variants
    .map(v => v.variant)
    .filter(v => typeof v === 'number') as number[];
  if (!ids.length) {
    return '';
  }
  const consecutive = ids.every((v, k) => k === 0 || v === ids[k - 1] + 1);
  if (ids.length > 2 && consecutive) {
    return `#${ids[0]}–#${ids[ids.length - 1]}`;
  }
  return valuesText(
    ids.map(i => `#${i}`),
    4
  );
}
