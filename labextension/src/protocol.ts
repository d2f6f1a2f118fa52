/**
 * The records the kernel sends over the `jitmagic` comm: the same dicts as
 * `jitmagic.tracker` (`event.to_dict()` and `snapshot()`). Every field is
 * optional here because the views must survive older or newer kernels.
 */

export type EventKind =
  | 'compile'
  | 'miss'
  | 'evict'
  | 'storm'
  | 'error'
  | 'disk_hit'
  | 'disk_miss'
  /** a shape-generic variant was compiled (or could not be): jm.jit(shapes=...) */
  | 'generalise'
  | 'generalise_failed'
  /** the variant's code was re-optimised at O3 after enough calls (jitmagic/tiering.py) */
  | 'tier_up'
  /** the O3 code ran slower than the code it replaced, which is back */
  | 'tier_down';

export interface IReason {
  kind?: string;
  arg?: string | null;
  old?: string | null;
  new?: string | null;
  text?: string;
}

export interface IJitEvent {
  seq?: number;
  /** the function's identity (same-named functions differ); newer trackers */
  fid?: number;
  /** which JIT compiled: jitmagic, or a watched jax / numba (jm.watch) */
  backend?: string;
  time?: number;
  kind?: EventKind | string;
  function?: string;
  qualname?: string;
  where?: string;
  variant?: number | null;
  statics?: { [name: string]: string };
  signature?: string;
  reasons?: IReason[];
  timings_ms?: { [phase: string]: number };
  message?: string;
  /** tier_up / tier_down: kernel µs per call before (and after) the change */
  run_us?: { [what: string]: number | null };
  /** the worker process the record came from, when not the kernel's own */
  worker?: number | string | null;
}

export interface IVariantInfo {
  variant?: number | null;
  statics?: { [name: string]: string };
  signature?: string;
  compile_ms?: number | null;
  calls?: number | null;
  run_ms_total?: number | null;
  run_ms_mean?: number | null;
  /** eager time over the jitted call time; with how it was measured */
  speedup?: number | null;
  break_even_calls?: number | null;
  /** how the figures were measured (samples, warm/cold, bound or value) */
  provenance?: string | null;
  /** which JIT compiled it: jitmagic (default), jax, numba */
  backend?: string | null;
  last_reason?: string | null;
  /** the optimisation tier of the code that runs: 0 quick, 1 light, 2 O3 */
  tier?: number | null;
  // speedup and break-even over NumPy, as %jit_cache shows them (jitmagic/baseline.py)
  kernel_ms_median?: number | null;
  call_ms?: number | null;
  eager_ms?: number | null;
  bound?: boolean;
  speedup_text?: string;
  break_even_text?: string;
  eager_text?: string;
  kernel_how?: string;
  call_how?: string;
  eager_how?: string;
  /** the inputs of its first call are kept: the panel can profile it */
  profilable?: boolean;
}

/**
 * A tracked Dask cluster's variants of one function and key, folded over its workers
 * (jitmagic/diagnostics/cluster): records of their statistics, not live variants.
 */
export interface IWorkerVariants {
  statics?: { [name: string]: string };
  signature?: string;
  /** the workers (addresses) that have it, and those that loaded it from the disk cache */
  workers?: string[];
  loaded?: string[];
  /** `on 2 workers: 1 compiled it, 1 loaded it from the disk cache` */
  summary?: string;
  compile_ms?: number | null;
  calls?: number | null;
  run_ms_total?: number | null;
  reason?: string | null;
}

export interface IFunctionInfo {
  /** absent for a function only a tracked cluster's workers have */
  fid?: number;
  backend?: string;
  /** jitmagic's front door that compiled it: jit (JAX's semantics) or njit (NumPy's) */
  front?: string;
  name?: string;
  qualname?: string;
  where?: string;
  variants?: IVariantInfo[];
  /** the same function's variants on a tracked cluster's workers (jm.dask.track) */
  workers?: IWorkerVariants[];
}

export interface ISnapshot {
  functions?: IFunctionInfo[];
  compiles?: number;
  misses?: number;
  evictions?: number;
  error?: string;
}

/** The dashboard MIME bundle `application/vnd.jitmagic.dashboard+json`. */
export interface IDashboard {
  functions?: IFunctionInfo[];
  events?: IJitEvent[];
  /** (unix time, cumulative run ms of every variant) after each cell */
  samples?: [number, number][];
  /** keep following the kernel through the panel's comm */
  live?: boolean;
  kernel_id?: string;
  /** the profiled regions under the machine's measured roofs (null: nothing profiled) */
  roofline?: IRoofline | null;
}

/** [name, GB/s or GFLOP/s, dashed] */
export type Roof = [string, number, boolean];

export interface IRooflinePoint {
  label?: string;
  /** flops per byte moved */
  intensity?: number;
  gflops?: number;
  /** memory, compute, overhead, serial dependence, latency, neither */
  bound?: string;
  share?: number;
  function?: string;
  fid?: number | null;
  variant?: number;
  region?: number;
  verdict?: string;
}

export interface IRoofline {
  roofs?: { memory?: Roof[]; peak?: Roof[] };
  points?: IRooflinePoint[];
}

/** One source line's part of a profile (jitmagic.diagnostics.profile_views.panel_data). */
export interface IProfileLine {
  line?: number;
  share?: number;
  bound?: string;
  of_roof?: number | null;
  roof?: string;
  regions?: number[];
  /** the figures of its regions, as the hover shows them */
  tip?: string;
}

export interface IProfileRegion {
  index?: number;
  label?: string;
  name?: string;
  kind?: string;
  time_us?: number;
  share?: number;
  bound?: string;
  verdict?: string;
  lines?: number[];
  facts?: string[];
  eqns?: string[];
  via?: string[];
}

/** A profile of one call, as the panel draws it: the annotated source and the regions. */
export interface IProfile {
  function?: string;
  variant?: number;
  head?: string;
  summary?: string;
  source_start?: number;
  source?: string[];
  lines?: IProfileLine[];
  regions?: IProfileRegion[];
  notes?: string[];
  roofs?: string;
  measured?: string;
}

export type CodeView = 'ir' | 'llvm' | 'asm';

export const COMM_TARGET = 'jitmagic';
export const DASHBOARD_MIME = 'application/vnd.jitmagic.dashboard+json';

/** kernel -> frontend */
export type KernelMessage =
  | { type: 'hello'; version?: string; kernel_id?: string }
  | { type: 'code'; req: number; text?: string; error?: string }
  | { type: 'profile'; req: number; profile?: IProfile; error?: string }
  | { type: 'event'; event: IJitEvent }
  | {
      type: 'events';
      events: IJitEvent[];
      /** a batch's kernel totals (the batch may leave out older events of a burst) */
      counts?: { compiles?: number; misses?: number; evictions?: number };
      /** events of the burst left out of this batch */
      dropped?: number;
    }
  | { type: 'snapshot'; snapshot: ISnapshot }
  | { type: 'bye' };

/** frontend -> kernel */
export type FrontendMessage =
  | { type: 'subscribe' }
  | { type: 'unsubscribe' }
  | { type: 'request_snapshot' }
  | {
      type: 'request_code';
      req: number;
      fid?: number;
      qualname?: string;
      variant: number;
      view: CodeView;
      /** a unified diff from this variant to `variant` */
      diff_from?: number;
    }
  | { type: 'clear_cache'; fid?: number }
  | {
      type: 'request_profile';
      req: number;
      fid?: number;
      qualname?: string;
      variant: number;
    };
