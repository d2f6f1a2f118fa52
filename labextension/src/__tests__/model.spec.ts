import { JitModel } from '../model';
import { compileEvent, missEvent, snapshot } from './fixtures';

describe('JitModel', () => {
  it('takes a snapshot as the truth', () => {
    const m = new JitModel();
    let changes = 0;
    m.changed.connect(() => changes++);
    m.handle({ type: 'snapshot', snapshot });
    expect(m.state).toBe('connected');
    expect([m.compiles, m.misses, m.evictions]).toEqual([2, 1, 0]);
    expect(m.variantCount('scale')).toBe(2);
    expect(changes).toBe(1);
  });

  it('counts live events and builds variants before any snapshot', () => {
    const m = new JitModel();
    m.handle({ type: 'event', event: compileEvent });
    m.handle({ type: 'event', event: missEvent });
    expect([m.compiles, m.misses]).toEqual([2, 1]);
    expect(m.variantCount('scale')).toBe(2);
    const v2 = m.functions[0].variants![1];
    expect(v2.statics).toEqual({ n: '3' });
    expect(v2.compile_ms).toBe(18.4);
    expect(v2.last_reason).toBe("static argument 'n' changed: 2 -> 3");
    expect(m.eventBySeq(2)).toBe(missEvent);
  });

  it('keeps the backend of a watched function seen first through an event', () => {
    const m = new JitModel();
    m.handle({
      type: 'event',
      event: { ...compileEvent, fid: 7, backend: 'numba' }
    });
    expect(m.functions[0].backend).toBe('numba');
  });

  it('does not count twice the backlog that a snapshot follows', () => {
    const m = new JitModel();
    m.handle({ type: 'events', events: [compileEvent, missEvent] });
    m.handle({ type: 'snapshot', snapshot });
    m.handle({ type: 'events', events: [compileEvent, missEvent] }); // a second subscribe
    expect(m.events.length).toBe(2);
    expect([m.compiles, m.misses]).toEqual([2, 1]);
  });

  it('drops evicted variants, and all of them when the cache is cleared', () => {
    const m = new JitModel();
    m.handle({ type: 'snapshot', snapshot });
    m.handle({
      type: 'event',
      event: { ...compileEvent, seq: 3, kind: 'evict', variant: 1 }
    });
    expect(m.functions[0].variants!.map(v => v.variant)).toEqual([2]);
    expect(m.evictions).toBe(1);
    m.handle({
      type: 'event',
      event: { ...compileEvent, seq: 4, kind: 'evict', variant: null }
    });
    expect(m.variantCount('scale')).toBe(0);
  });

  it('tells same-named functions apart by fid', () => {
    const m = new JitModel();
    m.handle({ type: 'event', event: { ...compileEvent, fid: 1 } });
    m.handle({ type: 'event', event: { ...compileEvent, seq: 2, fid: 2 } });
    expect(m.functions.length).toBe(2);
    m.handle({ type: 'event', event: { ...missEvent, seq: 3, fid: 2 } });
    expect(m.functions.map(f => f.variants!.length)).toEqual([1, 2]);
  });

  it('keeps at most maxEvents', () => {
    const m = new JitModel({ maxEvents: 3 });
    for (let i = 1; i <= 5; i++) {
      m.handle({
        type: 'event',
        event: { ...compileEvent, seq: i, variant: i }
      });
    }
    expect(m.events.map(e => e.seq)).toEqual([3, 4, 5]);
  });

  it('forgets everything on reset (kernel restart)', () => {
    const m = new JitModel();
    m.handle({ type: 'snapshot', snapshot });
    m.handle({ type: 'event', event: missEvent });
    m.reset('waiting', 'kernel restarted');
    expect([m.compiles, m.misses, m.functions.length, m.events.length]).toEqual(
      [0, 0, 0, 0]
    );
    expect(m.state).toBe('waiting');
    m.handle({ type: 'event', event: missEvent }); // seq 2 again in the new kernel
    expect(m.events.length).toBe(1);
  });

  it('survives garbage', () => {
    const m = new JitModel();
    for (const bad of [null, undefined, 3, 'x', {}, { type: 'nope' }]) {
      m.handle(bad as any);
    }
    m.handle({
      type: 'snapshot',
      snapshot: { functions: 'no' as any, compiles: 'x' as any }
    });
    m.handle({ type: 'events', events: null as any });
    m.handle({ type: 'event', event: { kind: 'compile' } });
    expect(m.functions).toEqual([]);
    expect(m.compiles).toBe(1);
  });

  it('goes back to waiting when jitmagic says bye', () => {
    const m = new JitModel();
    m.handle({ type: 'hello', version: '0.1.0' });
    expect(m.state).toBe('connected');
    expect(m.kernelVersion).toBe('0.1.0');
    m.handle({ type: 'bye' });
    expect(m.state).toBe('waiting');
  });
});

describe('JitModel session data', () => {
  it('samples cumulative run time per snapshot and remembers storms', () => {
    const m = new JitModel();
    m.handle({ type: 'hello', kernel_id: 'abc' } as any);
    expect(m.kernelId).toBe('abc');
    const fresh = () => JSON.parse(JSON.stringify(snapshot));
    m.handle({ type: 'snapshot', snapshot: fresh() });
    m.handle({ type: 'snapshot', snapshot: fresh() });
    expect(m.samples.length).toBe(1);
    expect(m.samples[0][1]).toBeCloseTo(0.012);
    m.handle({ type: 'event', event: { ...missEvent, seq: 7, kind: 'storm' } });
    expect(m.storms.get('scale')).toBe('n');
    m.reset('waiting');
    expect(m.samples).toEqual([]);
    expect(m.storms.size).toBe(0);
  });
});
