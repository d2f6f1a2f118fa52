import {
  byWorker,
  eventFacts,
  feedItems,
  feedLine,
  fieldFacts,
  filterKinds,
  itemLine,
  workerLabel
} from '../events';
import { IJitEvent } from '../protocol';
import { compileEvent, missEvent } from './fixtures';

const miss = (seq: number, extra: Partial<IJitEvent> = {}): IJitEvent => ({
  ...missEvent,
  seq,
  variant: seq,
  ...extra
});

describe('events of any kind', () => {
  it('offers tier_up and tier_down, and any kind the kernel sends', () => {
    const kinds = filterKinds([
      { kind: 'profile' },
      { kind: 'gc_pause' },
      { kind: 'miss' }
    ]);
    expect(kinds).toEqual(
      expect.arrayContaining(['tier_up', 'tier_down', 'profile'])
    );
    expect(kinds[kinds.length - 1]).toBe('gc_pause');
    expect(kinds.filter(k => k === 'miss').length).toBe(1);
  });

  it('formats a field by its name: times by unit, counts as counts, objects one level', () => {
    expect(
      fieldFacts('run_us', { before: 0.04, calls_before: 150000, after: null })
    ).toEqual([
      ['run before', '40.0 ns'],
      ['run calls before', '150k']
    ]);
    expect(fieldFacts('wait_ms', 1250)).toEqual([['wait', '1.25 s']]);
    expect(fieldFacts('hot_ops', ['mul', 'add'])).toEqual([
      ['hot ops', 'mul, add']
    ]);
    expect(fieldFacts('note', '')).toEqual([]);
    expect(fieldFacts('ratio', 0.123456)).toEqual([['ratio', '0.1235']]);
  });

  it('shows a tier_up with its before and after, and a new kind without a message', () => {
    const tierUp: IJitEvent = {
      ...compileEvent,
      seq: 9,
      kind: 'tier_up',
      message: 'scale: variant 1 re-optimised at O3 in 35.0 ms after 200 calls',
      run_us: { before: 12.5, calls_before: 200 }
    };
    const facts = eventFacts(tierUp);
    expect(facts).toContainEqual(['run before', '12.5 µs']);
    expect(facts).toContainEqual(['run calls before', '200']);
    expect(feedLine(tierUp)).toBe(tierUp.message);
    const profile = {
      seq: 10,
      kind: 'profile',
      function: 'scale',
      samples: 120,
      top_op: 'matmul',
      worker: 2
    } as IJitEvent;
    expect(feedLine(profile)).toBe(
      'profile scale · samples 120 · top op matmul'
    );
    expect(eventFacts(profile)).toContainEqual(['worker', 'worker 2']);
    expect(workerLabel(profile)).toBe('worker 2');
    expect(workerLabel({ ...profile, worker: 'pool-a' } as IJitEvent)).toBe(
      'pool-a'
    );
  });

  it('folds a storm: misses and evictions of one function, not across a storm or worker', () => {
    const evict: IJitEvent = {
      ...miss(4),
      kind: 'evict',
      reasons: [],
      message: 'evicted'
    };
    const storm: IJitEvent = { ...miss(6), kind: 'storm', message: 'storm' };
    const items = feedItems([
      compileEvent,
      miss(3),
      evict,
      miss(5),
      storm,
      miss(7),
      miss(8, { worker: 1 } as Partial<IJitEvent>)
    ]);
    expect(items.map(i => i.events.map(e => e.seq))).toEqual([
      [8],
      [7],
      [6],
      [5, 4, 3],
      [1]
    ]);
    expect(itemLine(items[3])).toBe(
      "scale: 2 recompiles, 1 eviction (latest: static argument 'n' changed: 2 -> 3)"
    );
    const groups = byWorker(items);
    expect(groups.map(g => [g.worker, g.items.length])).toEqual([
      ['', 4],
      ['worker 1', 1]
    ]);
  });
});
