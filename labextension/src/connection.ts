/**
 * KernelBridge: keeps one JitModel in step with the kernel of one session
 * (a notebook), across kernel changes, restarts and `%reload_ext jitmagic`.
 *
 * The kernel announces jitmagic by opening a `jitmagic` comm when the
 * extension loads; we adopt it and say "subscribe". When we meet a kernel
 * that loaded jitmagic before we were listening (page reload, notebook opened
 * on a running kernel), comm_info tells us so and we open our own comm.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';

import { JitModel } from './model';
import { CodeView, COMM_TARGET, FrontendMessage, IProfile } from './protocol';
import { registry } from './registry';

/** What the panel asks the kernel to profile: one variant, on its first call's inputs. */
export interface IProfileRequest {
  fid?: number;
  qualname?: string;
  variant: number;
}

/** What the panel asks the kernel for: one variant's code, or a diff of two. */
export interface ICodeRequest {
  fid?: number;
  qualname?: string;
  variant: number;
  view: CodeView;
  diffFrom?: number;
}

export class KernelBridge implements IDisposable {
  constructor(readonly sessionContext: ISessionContext) {
    sessionContext.kernelChanged.connect(this._onKernelChanged, this);
    this._attach(sessionContext.session?.kernel ?? null);
  }

  readonly model = new JitModel();

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Ask the kernel for a fresh snapshot (no-op when not connected). */
  refresh(): void {
    this._send({ type: 'request_snapshot' });
  }

  /** A variant's IR, LLVM IR or assembly (or a diff of two), fetched when asked for. */
  async requestCode(r: ICodeRequest, timeoutMs = 30000): Promise<string> {
    const data = await this._request(
      req => ({
        type: 'request_code',
        req,
        fid: r.fid,
        qualname: r.qualname,
        variant: r.variant,
        view: r.view,
        diff_from: r.diffFrom
      }),
      timeoutMs
    );
    return String(data.text ?? '');
  }

  /**
   * A profile of one variant, run by the kernel on the inputs of the variant's first call
   * (a few seconds: the kernel times the call and its instrumented twin in turns).
   */
  async requestProfile(
    r: IProfileRequest,
    timeoutMs = 120000
  ): Promise<IProfile> {
    const data = await this._request(
      req => ({
        type: 'request_profile',
        req,
        fid: r.fid,
        qualname: r.qualname,
        variant: r.variant
      }),
      timeoutMs
    );
    return (data.profile ?? {}) as IProfile;
  }

  private _request(
    make: (req: number) => FrontendMessage,
    timeoutMs: number
  ): Promise<any> {
    if (!this._comm || this._comm.isDisposed) {
      return Promise.reject(
        new Error('jitmagic is not connected to this kernel')
      );
    }
    const req = ++this._req;
    return new Promise<any>((resolve, reject) => {
      const timer = setTimeout(() => {
        this._pending.delete(req);
        reject(
          new Error('the kernel did not answer (is a cell still running?)')
        );
      }, timeoutMs);
      this._pending.set(req, { resolve, reject, timer });
      this._send(make(req));
    });
  }

  /** Drop compiled variants (one function's, or every one), as `%jit_cache --clear`. */
  clearCache(fid?: number): void {
    this._send({ type: 'clear_cache', fid });
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.sessionContext.kernelChanged.disconnect(this._onKernelChanged, this);
    this._detach();
  }

  private _onKernelChanged(
    _: ISessionContext,
    args: { newValue: Kernel.IKernelConnection | null }
  ): void {
    this._attach(args.newValue);
  }

  private _attach(kernel: Kernel.IKernelConnection | null): void {
    this._detach();
    this._kernel = kernel;
    if (!kernel) {
      this.model.reset('no-kernel');
      return;
    }
    this.model.reset('waiting');
    kernel.registerCommTarget(COMM_TARGET, this._adopt);
    kernel.statusChanged.connect(this._onStatus, this);
    kernel.connectionStatusChanged.connect(this._onConnection, this);
    void this._probe();
  }

  private _detach(): void {
    const kernel = this._kernel;
    if (kernel && !kernel.isDisposed) {
      kernel.statusChanged.disconnect(this._onStatus, this);
      kernel.connectionStatusChanged.disconnect(this._onConnection, this);
      kernel.removeCommTarget(COMM_TARGET, this._adopt);
    }
    // leave the comm open: it is how a later probe sees that jitmagic is loaded
    this._send({ type: 'unsubscribe' });
    this._comm = null;
    this._kernel = null;
    this._failPending('the kernel changed');
    registry.setModel(this.model.kernelId, null);
  }

  private _onStatus(
    kernel: Kernel.IKernelConnection,
    status: Kernel.Status
  ): void {
    if (status === 'restarting' || status === 'autorestarting') {
      // the kernel process is new: jitmagic must be loaded again
      this._comm = null;
      this._failPending('the kernel restarted');
      registry.setModel(this.model.kernelId, null);
      this.model.reset('waiting', 'kernel restarted');
    }
  }

  private _onConnection(
    kernel: Kernel.IKernelConnection,
    status: Kernel.ConnectionStatus
  ): void {
    if (status === 'connected' && !this._comm) {
      void this._probe();
    }
  }

  /** Is jitmagic already loaded in the kernel? Then open our own comm. */
  private async _probe(): Promise<void> {
    const kernel = this._kernel;
    if (!kernel || this._comm) {
      return;
    }
    let reply: KernelMessage.ICommInfoReplyMsg;
    try {
      reply = await kernel.requestCommInfo({ target_name: COMM_TARGET });
    } catch {
      return; // kernel gone or restarting; the next hello will reach us
    }
    const content = reply.content as any;
    const comms = content.status === 'ok' ? (content.comms ?? {}) : {};
    const loaded = Object.keys(comms).some(
      id => (comms[id]?.target_name ?? COMM_TARGET) === COMM_TARGET
    );
    if (
      loaded &&
      !this._comm &&
      this._kernel === kernel &&
      !kernel.isDisposed
    ) {
      const comm = kernel.createComm(COMM_TARGET);
      this._use(comm);
      comm.open({ type: 'subscribe' });
    }
  }

  /** The kernel opened a comm: jitmagic was (re)loaded. */
  private _adopt = (
    comm: Kernel.IComm,
    msg: KernelMessage.ICommOpenMsg
  ): void => {
    if (this._comm && !this._comm.isDisposed) {
      // we stream through another comm already; leave this one idle
      return;
    }
    this._use(comm);
    this.model.handle(msg.content.data as any);
    if (this.model.kernelId) {
      registry.setModel(this.model.kernelId, this.model);
    }
    this._send({ type: 'subscribe' });
  };

  private _use(comm: Kernel.IComm): void {
    this._comm = comm;
    comm.onMsg = msg => {
      const data = msg.content.data as any;
      if (data && (data.type === 'code' || data.type === 'profile')) {
        this._answer(data);
        return;
      }
      this.model.handle(data);
      if (data && data.type === 'hello' && this.model.kernelId) {
        registry.setModel(this.model.kernelId, this.model);
      }
    };
    comm.onClose = msg => {
      if (this._comm === comm) {
        this._comm = null;
        const data = (msg.content.data ?? {}) as any;
        this.model.setState(
          'waiting',
          data.type === 'bye' ? 'jitmagic was unloaded' : ''
        );
      }
    };
  }

  private _send(msg: FrontendMessage): void {
    const comm = this._comm;
    if (comm && !comm.isDisposed) {
      try {
        comm.send(msg as any);
      } catch (e) {
        console.warn('jitmagic: could not reach the kernel', e);
      }
    }
  }

  /** The kernel's answer to a request (code or profile): settles its promise. */
  private _answer(data: { req?: number; error?: string }): void {
    const p = this._pending.get(Number(data.req));
    if (!p) {
      return;
    }
    this._pending.delete(Number(data.req));
    clearTimeout(p.timer);
    if (data.error) {
      p.reject(new Error(data.error));
    } else {
      p.resolve(data);
    }
  }

  private _failPending(why: string): void {
    this._pending.forEach(p => {
      clearTimeout(p.timer);
      p.reject(new Error(why));
    });
    this._pending.clear();
  }

  private _req = 0;
  private _pending = new Map<
    number,
    {
      resolve: (answer: any) => void;
      reject: (e: Error) => void;
      timer: ReturnType<typeof setTimeout>;
    }
  >();
  private _kernel: Kernel.IKernelConnection | null = null;
  private _comm: Kernel.IComm | null = null;
  private _disposed = false;
}
