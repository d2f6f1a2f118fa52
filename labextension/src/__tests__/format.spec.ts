import { eventLine, ms, plural, reasonText, statics, statusText } from '../format';
import { missEvent } from './fixtures';

describe('format', () => {
  it('writes the status bar text with plurals', () => {
    expect(statusText(12, 3)).toBe('JIT 12 compiles · 3 misses');
    expect(statusText(1, 1)).toBe('JIT 1 compile · 1 miss');
    expect(statusText(0, 0)).toBe('JIT 0 compiles · 0 misses');
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
