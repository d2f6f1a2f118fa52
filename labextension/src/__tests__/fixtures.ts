/** Records shaped like what jitmagic.tracker sends (taken from a real run). */
import { IJitEvent, ISnapshot } from '../protocol';

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
