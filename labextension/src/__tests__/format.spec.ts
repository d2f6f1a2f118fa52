import {
  callsText,
  callsUnit,
  clipMiddle,
  count,
  readable,
  signatureTip,
  variantLabel,
  cellNumber,
  eventLine,
  location,
  logTicks,
  ms,
  niceTicks,
  payoffText,
  plural,
  reasonRuns,
  reasonText,
  statics,
  statusText
} from '../format';
import { missEvent } from './fixtures';

describe('format', () => {
  it('writes the status bar text with plurals', () => {
    expect(statusText(5, 3)).toBe('JIT 5 compiles, 3 of them recompiles');
    expect(statusText(2, 1)).toBe('JIT 2 compiles, 1 of them a recompile');
    expect(statusText(1, 0)).toBe('JIT 1 compile');
    expect(statusText(0, 0)).toBe('JIT 0 compiles');
    expect(plural(2, 'variant')).toBe('2 variants');
  });

  it('picks a time unit that reads', () => {
    expect(ms(1250)).toBe('1.25 s');
    expect(ms(96.3)).toBe('96.3 ms');
    expect(ms(103.4)).toBe('103 ms');
    expect(ms(0.00437)).toBe('4.37 µs');
    expect(ms(0)).toBe('0 ms');
    expect(ms(null)).toBe('–');
    expect(ms(undefined)).toBe('–');
    expect(ms(NaN)).toBe('–');
  });

  it('shows static values and reasons', () => {
    expect(statics({ n: '3', mode: "'fast'" })).toBe("n=3, mode='fast'");
    expect(statics(undefined)).toBe('');
    expect(
      reasonText({ kind: 'shape', arg: 'x', old: 'f64[3]', new: 'f64[4]' })
    ).toBe('x: f64[3] → f64[4]');
    expect(reasonText({ text: 'new function' })).toBe('new function');
  });

  it('gives an event one line: its message, else its reasons', () => {
    expect(eventLine(missEvent)).toBe(missEvent.message);
    expect(eventLine({ ...missEvent, message: '' })).toBe(
      "scale: static argument 'n' changed: 2 -> 3"
    );
    expect(eventLine({})).toBe('event ?');
  });
});

describe('format for a narrow panel', () => {
  it('writes every cell location as In[n]:line and finds the cell number', () => {
    expect(location('cell In[2]:4')).toBe('In[2]:4');
    expect(location('util.py:10')).toBe('util.py:10');
    expect(location(undefined)).toBe('');
    expect(cellNumber('In[12]:3')).toBe(12);
    expect(cellNumber('cell In[2]:4')).toBe(2);
    expect(cellNumber('util.py:10')).toBeNull();
  });

  it('keeps `old -> new` in one unbreakable run', () => {
    const runs = reasonRuns(
      "static argument 'n' changed: 2 -> 3; shape f64[3] -> f64[4]"
    );
    expect(runs.filter(r => r.keep).map(r => r.text)).toEqual([
      '2 -> 3;',
      'f64[3] -> f64[4]'
    ]);
    expect(runs.map(r => r.text).join('')).toBe(
      "static argument 'n' changed: 2 -> 3; shape f64[3] -> f64[4]"
    );
    expect(reasonRuns('new function')).toEqual([
      { text: 'new function', keep: false }
    ]);
  });

  it('shows one call as one number', () => {
    expect(callsText(1, 0.0044, 0.0044)).toBe('1 call · 4.40 µs');
    expect(callsText(3, 0.002, 0.006)).toBe(
      '3 calls · 2.00 µs mean · 6.00 µs total'
    );
    expect(callsText(0)).toBe('not called yet');
    expect(callsText(null)).toBe('calls –');
  });

  it('says when compiling never pays off', () => {
    expect(payoffText(0.6, null)).toBe('0.60x NumPy · never pays off');
    expect(payoffText(20.4, 130)).toBe('20x NumPy · pays off after 130 calls');
    expect(payoffText(null, 3)).toBe('');
  });

  it('picks round ticks, linear and by decade', () => {
    expect(niceTicks(0, 10, 5)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(niceTicks(0, 0.37, 4)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(logTicks(0.004, 120)).toEqual([0.001, 0.01, 0.1, 1, 10, 100, 1000]);
    expect(logTicks(0, 10)).toEqual([]);
  });
});

describe('format without surprises', () => {
  it('writes counts without exponent notation', () => {
    const cases: [number, string][] = [
      [950, '950'],
      [1000, '1k'],
      [1234, '1.2k'],
      [35000, '35k'],
      [100000, '100k'],
      [150000, '150k'],
      [999000, '999k'],
      [999600, '1M'],
      [1.5e6, '1.5M'],
      [1.5e8, '150M'],
      [2.5e9, '2.5G'],
      [-1500, '-1.5k']
    ];
    for (const [n, text] of cases) {
      expect(count(n)).toBe(text);
    }
    for (let e = 0; e < 14; e += 0.25) {
      expect(count(Math.pow(10, e))).not.toMatch(/e/);
    }
  });

  it('says "1 call", never "1 calls"', () => {
    expect(callsUnit('1')).toBe(' call');
    expect(callsUnit('≤ 1')).toBe(' call');
    expect(callsUnit('130')).toBe(' calls');
    expect(callsUnit('never')).toBe('');
    expect(payoffText(2, 1)).toBe('2.00x NumPy · pays off after 1 call');
    expect(ms(0.00004)).toBe('40.0 ns'); // not "0.0 µs"
  });

  it('shortens a long name in the middle and keeps the variant number', () => {
    const short = clipMiddle('exponentially_weighted_moving_average', 20);
    expect(short).toBe('exponentia…g_average');
    expect(short.length).toBe(20);
    const labels = [1, 2, 12].map(v =>
      variantLabel('exponentially_weighted_moving_average', v, 'dt=0.1')
    );
    for (const [i, v] of [1, 2, 12].entries()) {
      expect(labels[i].length).toBeLessThanOrEqual(30);
      expect(labels[i]).toContain(`#${v}`);
      expect(labels[i].startsWith('expon')).toBe(true);
    }
    expect(new Set(labels).size).toBe(3);
    expect(variantLabel('scale', 2, 'n=3')).toBe('scale #2 n=3');
  });

  it('explains the ~ of a weak type, and reads long floats at 6 figures', () => {
    expect(signatureTip('x:f64[4]')).toBe('x:f64[4]');
    expect(signatureTip('x:f64[4], s:f64[]~')).toMatch(
      /~ marks a weak type: a Python scalar/
    );
    expect(
      readable("static argument 'dt' changed: 0.009371372050021 -> 0.01")
    ).toBe("static argument 'dt' changed: 0.00937137 -> 0.01");
    expect(readable('x:f64[1234567] v2.0000001')).toBe(
      'x:f64[1234567] v2.0000001'
    );
    // a run too long for a narrow panel may wrap; a short one stays whole
    const runs = reasonRuns(
      'dt: 0.009371372050021 -> 0.018742744100042; n: 2 -> 3'
    );
    expect(runs.filter(r => r.keep).map(r => r.text)).toEqual(['2 -> 3']);
  });
});
