import {
  callsText,
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
    expect(reasonText({ kind: 'shape', arg: 'x', old: 'f64[3]', new: 'f64[4]' })).toBe(
      'x: f64[3] → f64[4]'
    );
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
    const runs = reasonRuns("static argument 'n' changed: 2 -> 3; shape f64[3] -> f64[4]");
    expect(runs.filter(r => r.keep).map(r => r.text)).toEqual(['2 -> 3;', 'f64[3] -> f64[4]']);
    expect(runs.map(r => r.text).join('')).toBe("static argument 'n' changed: 2 -> 3; shape f64[3] -> f64[4]");
    expect(reasonRuns('new function')).toEqual([{ text: 'new function', keep: false }]);
  });

  it('shows one call as one number', () => {
    expect(callsText(1, 0.0044, 0.0044)).toBe('1 call · 4.40 µs');
    expect(callsText(3, 0.002, 0.006)).toBe('3 calls · 2.00 µs mean · 6.00 µs total');
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
