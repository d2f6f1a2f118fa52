/** Records shaped like what jitmagic.tracker sends (taken from a real run). */
import { IJitEvent, IProfile, IRoofline, ISnapshot } from '../protocol';

export const compileEvent: IJitEvent = {
  seq: 1,
  time: 1795322441.5,
  kind: 'compile',
  function: 'scale',
  qualname: 'scale',
  where: 'cell In[2]:4',
  variant: 1,
  statics: { n: '2' },
  signature: 'x:f64[4]',
  reasons: [
    {
      kind: 'new_function',
      arg: null,
      old: null,
      new: null,
      text: 'new function'
    }
  ],
  timings_ms: {
    trace: 0.39,
    passes: 0.12,
    llvm_ir: 15.7,
    llvm_opt: 9.6,
    codegen: 15.1,
    total: 41.0
  },
  message: 'scale: compiled variant 1 in 41.0 ms (new function)'
};

export const missEvent: IJitEvent = {
  ...compileEvent,
  seq: 2,
  time: 1795322441.6,
  kind: 'miss',
  variant: 2,
  statics: { n: '3' },
  reasons: [
    {
      kind: 'static_value',
      arg: 'n',
      old: '2',
      new: '3',
      text: "static argument 'n' changed: 2 -> 3"
    }
  ],
  timings_ms: {
    trace: 0.33,
    passes: 0.12,
    llvm_ir: 0.86,
    llvm_opt: 7.6,
    codegen: 9.5,
    total: 18.4
  },
  message:
    "scale: compiled variant 2 in 18.4 ms (static argument 'n' changed: 2 -> 3)"
};

export const snapshot: ISnapshot = {
  functions: [
    {
      name: 'scale',
      qualname: 'scale',
      where: 'cell In[2]:4',
      variants: [
        {
          variant: 1,
          statics: { n: '2' },
          signature: 'x:f64[4]',
          compile_ms: 41.0,
          calls: 1,
          run_ms_total: 0.0044,
          run_ms_mean: 0.0044,
          last_reason: 'new function'
        },
        {
          variant: 2,
          statics: { n: '3' },
          signature: 'x:f64[4]',
          compile_ms: 18.4,
          calls: 2,
          run_ms_total: 0.0076,
          run_ms_mean: 0.0038,
          last_reason: "static argument 'n' changed: 2 -> 3",
          kernel_ms_median: 0.00003,
          call_ms: 0.0052,
          eager_ms: 0.0012,
          bound: false,
          speedup_text: '0.23x',
          break_even_text: 'never',
          eager_text: '1.2 µs',
          call_how: 'median of 15 batches of 19, warm',
          eager_how: 'median of 15 batches of 57, warm'
        }
      ]
    }
  ],
  compiles: 2,
  misses: 1,
  evictions: 0
};

/** A profile as the kernel sends it (jitmagic.diagnostics.profile_views.panel_data), from a
 * real run, trimmed to two of its regions' facts. */
export const profile: IProfile = {
  function: 'step',
  variant: 1,
  head: 'profile of step, variant 1 (x:f64[100000], v:f64[100000], dt:f64[]~), quick (-O1) tier: a call takes 143 µs = dispatch 378 ns + results 1.76 µs + kernel 141 µs',
  summary:
    'step variant 1: a call takes 143 µs; the costliest region, fused loop nest: mul, add (line 5, 49%): memory-bound: 48% of measured last-level cache bandwidth, 1 thread.',
  source_start: 2,
  source: [
    'def step(x, v, dt):',
    '    a = -4.0 * x',
    '    v = v + dt * a',
    '    x = x + dt * v',
    '    return x, v, (x * x).sum()'
  ],
  lines: [
    {
      line: 3,
      share: 0.10117,
      bound: 'memory',
      of_roof: 0.7734,
      roof: 'last-level cache bandwidth, 1 thread',
      regions: [1],
      tip: 'region [1] lines 3, 4: fused loop nest: mul, add\n28.7 µs (30.4% of the call)\nmemory-bound: 77% of measured last-level cache bandwidth, 1 thread\nfused with line 4'
    },
    {
      line: 4,
      share: 0.20235,
      bound: 'memory',
      of_roof: 0.7734,
      roof: 'last-level cache bandwidth, 1 thread',
      regions: [1],
      tip: 'region [1] lines 3, 4: fused loop nest: mul, add'
    },
    {
      line: 5,
      share: 0.48727,
      bound: 'memory',
      of_roof: 0.4818,
      roof: 'last-level cache bandwidth, 1 thread',
      regions: [2],
      tip: 'region [2] line 5: fused loop nest: mul, add'
    },
    {
      line: 6,
      share: 0.18432,
      bound: 'serial dependence',
      of_roof: 0.05,
      roof: 'last-level cache bandwidth, 1 thread',
      regions: [3],
      tip: 'region [3] line 6: reduction: mul, reduce_sum'
    }
  ],
  regions: [
    {
      index: -2,
      label: 'dispatch',
      name: 'Python to native code and back (argument conversion, cache lookup, the call)',
      kind: 'dispatch',
      time_us: 0.3777,
      share: 0.004,
      bound: 'overhead',
      verdict: "the call's own cost: Python to native code and back",
      lines: [],
      facts: ['378 ns (0.4% of the call)'],
      eqns: [],
      via: []
    },
    {
      index: -1,
      label: 'allocation',
      name: 'result arrays allocated',
      kind: 'allocation',
      time_us: 1.7586,
      share: 0.0186,
      bound: 'overhead',
      verdict: "the call's own cost: result arrays allocated",
      lines: [],
      facts: ['1.76 µs (1.9% of the call)'],
      eqns: [],
      via: []
    },
    {
      index: 1,
      label: '[1] lines 3, 4',
      name: 'fused loop nest: mul, add',
      kind: 'elementwise',
      time_us: 28.68,
      share: 0.3035,
      bound: 'memory',
      verdict:
        'memory-bound: 77% of measured last-level cache bandwidth, 1 thread',
      lines: [3, 4],
      facts: [
        '28.7 µs (30.4% of the call)',
        '100 k elements',
        'read 1.6 MB, wrote 800 kB',
        '83.7 GB/s',
        'vector 8 x double'
      ],
      eqns: ['b:f64[100000] = mul -4.0:f64[]~ a', 'd:f64[100000] = add c b'],
      via: []
    },
    {
      index: 2,
      label: '[2] line 5',
      name: 'fused loop nest: mul, add',
      kind: 'elementwise',
      time_us: 46.0,
      share: 0.4873,
      bound: 'memory',
      verdict:
        'memory-bound: 48% of measured last-level cache bandwidth, 1 thread',
      lines: [5],
      facts: ['46 µs (48.7% of the call)', '52.1 GB/s'],
      eqns: [],
      via: ['helper.py:3 in helper: return y * 2']
    }
  ],
  notes: ['the call had no variant: variant 1 was compiled first'],
  roofs:
    'roofs (znver5, measured just now): memory 26.9 GB/s on 1 thread, 39.3 on 2',
  measured: 'mean of the quieter 13 of 25 rounds of 9 calls each'
};

/** The dashboard's roofline (jitmagic.notebook.dashboard.roofline_data), from the same run. */
export const roofline: IRoofline = {
  roofs: {
    memory: [
      ['L2, 1 thread (246 GB/s)', 246.49, true],
      ['last-level cache, 1 thread (108 GB/s)', 108.19, true],
      ['memory, 1 thread (27 GB/s)', 26.93, false],
      ['memory, 2 threads (39 GB/s)', 39.34, false]
    ],
    peak: [
      ['peak float64, 1 thread (86 GFLOP/s)', 85.87, false],
      ['peak float64, 2 threads (73 GFLOP/s)', 73.1, true]
    ]
  },
  points: [
    {
      label: 'step L3,4',
      intensity: 0.125,
      gflops: 10.46,
      bound: 'memory',
      share: 0.3035,
      function: 'step',
      fid: 1,
      variant: 1,
      region: 1,
      verdict:
        'memory-bound: 77% of measured last-level cache bandwidth, 1 thread'
    },
    {
      label: 'other L2',
      intensity: 12.5,
      gflops: 60.2,
      bound: 'compute',
      share: 0.9,
      function: 'other',
      fid: 7,
      variant: 1,
      region: 1,
      verdict: 'compute-bound: 74% of measured peak FMA throughput'
    }
  ]
};
