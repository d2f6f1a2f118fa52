import {
  changedArgument,
  foldVariants,
  idsText,
  splitTopLevel,
  valuesText,
  variantParts
} from '../fold';
import { IVariantInfo } from '../protocol';

const storm = (n: number, from = 1): IVariantInfo[] =>
  Array.from({ length: n }, (_, i) => ({
    variant: from + i,
    statics: { dt: String((i + 1) / 10), mode: "'fast'" },
    signature: 'x:f64[3, 4], y:f32[]~'
  }));

describe('fold', () => {
  it('spells a variant out by argument, splitting signatures at top-level commas', () => {
    expect(splitTopLevel('x:f64[3, 4], y:f32[]~')).toEqual([
      'x:f64[3, 4]',
      'y:f32[]~'
    ]);
    expect(Array.from(variantParts(storm(1)[0]))).toEqual([
      ['dt', '0.1'],
      ['mode', "'fast'"],
      ['x', 'f64[3, 4]'],
      ['y', 'f32[]~']
    ]);
  });

  it('finds the one argument that differs, or none', () => {
    const [a, b] = storm(2).map(variantParts);
    expect(changedArgument(a, b)).toBe('dt');
    expect(changedArgument(a, a)).toBeNull();
    const c = variantParts({
      ...storm(2)[1],
      signature: 'x:f64[3, 5], y:f32[]~'
    });
    expect(changedArgument(a, c)).toBeNull(); // dt and x both changed
  });

  it('folds a storm of 30 variants into one group with its values', () => {
    const first: IVariantInfo = {
      variant: 0,
      statics: {},
      signature: 'x:f64[3, 4]'
    };
    const groups = foldVariants([first, ...storm(30)]);
    expect(groups.length).toBe(2);
    expect(groups[0].variants).toEqual([first]);
    expect(groups[1].arg).toBe('dt');
    expect(groups[1].variants.length).toBe(30);
    expect(valuesText(groups[1].values!)).toBe(
      '0.1, 0.2, 0.3, … 2.8, 2.9, 3 (30 values)'
    );
    expect(idsText(groups[1].variants)).toBe('#1–#30');
  });

  it('leaves a few variants as they are, and folds by shape too', () => {
    expect(foldVariants(storm(3)).map(g => g.variants.length)).toEqual([
      1, 1, 1
    ]);
    const shapes: IVariantInfo[] = [3, 4, 5, 6, 7].map((n, i) => ({
      variant: i + 1,
      statics: {},
      signature: `x:f64[${n}]`
    }));
    const [g] = foldVariants(shapes, 4);
    expect(g.arg).toBe('x');
    expect(g.values).toEqual([
      'f64[3]',
      'f64[4]',
      'f64[5]',
      'f64[6]',
      'f64[7]'
    ]);
  });

  it('writes ids as a range only when they are consecutive', () => {
    expect(idsText([{ variant: 2 }, { variant: 5 }, { variant: 9 }])).toBe(
      '#2, #5, #9'
    );
    expect(valuesText(['a', 'b'])).toBe('a, b');
  });
});
