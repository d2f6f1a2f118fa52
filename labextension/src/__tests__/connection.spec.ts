import { Signal } from '@lumino/signaling';

import { KernelBridge } from '../connection';
import { snapshot } from './fixtures';

/** Just enough of a kernel connection and a session context. */
class FakeComm {
  constructor(
    readonly targetName: string,
    readonly commId: string
  ) {}
  isDisposed = false;
  sent: any[] = [];
  opened: any = null;
  onMsg: (msg: any) => void = () => undefined;
  onClose: (msg: any) => void = () => undefined;
  send(data: any) {
    this.sent.push(data);
  }
  open(data: any) {
    this.opened = data;
  }
  close() {
    this.isDisposed = true;
  }
  /** the kernel talks */
  receive(data: any) {
    this.onMsg({ content: { comm_id: this.commId, data } });
  }
}

class FakeKernel {
  constructor(readonly openComms: string[] = []) {}
  isDisposed = false;
  targets: { [name: string]: (comm: any, msg: any) => void } = {};
  created: FakeComm[] = [];
  statusChanged = new Signal<this, string>(this);
  connectionStatusChanged = new Signal<this, string>(this);
  registerCommTarget(name: string, cb: any) {
    this.targets[name] = cb;
  }
  removeCommTarget(name: string) {
    delete this.targets[name];
  }
  async requestCommInfo(content: any) {
    const comms: any = {};
    this.openComms.forEach(
      id => (comms[id] = { target_name: content.target_name })
    );
    return { content: { status: 'ok', comms } };
  }
  createComm(target: string) {
    const c = new FakeComm(target, `frontend-${this.created.length}`);
    this.created.push(c);
    return c;
  }
  /** jitmagic.comm.start() in the kernel */
  announce(): FakeComm {
    const c = new FakeComm('jitmagic', `kernel-${Math.random()}`);
    const data = { type: 'hello', version: '0.1.0' };
    this.targets['jitmagic'](c, {
      content: { comm_id: c.commId, target_name: 'jitmagic', data }
    });
    return c;
  }
}

function session(kernel: FakeKernel | null) {
  return {
    kernelChanged: new Signal<any, any>({}),
    session: kernel ? { kernel } : null
  } as any;
}

const flush = () => new Promise(r => setTimeout(r, 0));

describe('KernelBridge', () => {
  it('adopts the comm jitmagic opens, subscribes, and feeds the model', async () => {
    const kernel = new FakeKernel();
    const bridge = new KernelBridge(session(kernel));
    await flush();
    expect(bridge.model.state).toBe('waiting');
    expect(kernel.created).toEqual([]); // nothing loaded: the kernel hears nothing from us
    const comm = kernel.announce();
    expect(bridge.model.state).toBe('connected');
    expect(comm.sent).toEqual([{ type: 'subscribe' }]);
    comm.receive({ type: 'snapshot', snapshot });
    expect(bridge.model.variantCount('scale')).toBe(2);
    bridge.refresh();
    expect(comm.sent[1]).toEqual({ type: 'request_snapshot' });
  });

  it('opens its own comm when jitmagic was loaded before we listened', async () => {
    const kernel = new FakeKernel(['kernel-1']);
    const bridge = new KernelBridge(session(kernel));
    await flush();
    expect(kernel.created.length).toBe(1);
    expect(kernel.created[0].opened).toEqual({ type: 'subscribe' });
    kernel.created[0].receive({ type: 'snapshot', snapshot });
    expect(bridge.model.compiles).toBe(2);
  });

  it('resets on kernel restart and reattaches on the next %load_ext', async () => {
    const kernel = new FakeKernel();
    const bridge = new KernelBridge(session(kernel));
    const first = kernel.announce();
    first.receive({ type: 'snapshot', snapshot });
    kernel.statusChanged.emit('restarting');
    expect(bridge.model.state).toBe('waiting');
    expect(bridge.model.compiles).toBe(0);
    const second = kernel.announce();
    expect(second.sent).toEqual([{ type: 'subscribe' }]);
    second.receive({ type: 'snapshot', snapshot });
    expect(bridge.model.compiles).toBe(2);
  });

  it('survives %reload_ext: the old comm closes, the new one is adopted', () => {
    const kernel = new FakeKernel();
    const bridge = new KernelBridge(session(kernel));
    const first = kernel.announce();
    first.onClose({
      content: { comm_id: first.commId, data: { type: 'bye' } }
    });
    expect(bridge.model.state).toBe('waiting');
    const second = kernel.announce();
    expect(bridge.model.state).toBe('connected');
    expect(second.sent).toEqual([{ type: 'subscribe' }]);
  });

  it('follows a kernel change and lets go of the old kernel', async () => {
    const a = new FakeKernel();
    const ctx = session(a);
    const bridge = new KernelBridge(ctx);
    const comm = a.announce();
    const b = new FakeKernel();
    ctx.kernelChanged.emit({ newValue: b, oldValue: a });
    expect(a.targets['jitmagic']).toBeUndefined();
    expect(comm.sent.pop()).toEqual({ type: 'unsubscribe' });
    expect(b.targets['jitmagic']).toBeDefined();
    expect(bridge.model.state).toBe('waiting');
    bridge.dispose();
    expect(b.targets['jitmagic']).toBeUndefined();
  });

  it('without a kernel says so', () => {
    const bridge = new KernelBridge(session(null));
    expect(bridge.model.state).toBe('no-kernel');
  });
});

describe('KernelBridge.requestProfile', () => {
  it('asks the kernel and resolves with its profile, or rejects with its error', async () => {
    const kernel = new FakeKernel();
    const bridge = new KernelBridge(session(kernel));
    await flush();
    const comm = kernel.announce();
    const asked = bridge.requestProfile({
      fid: 3,
      qualname: 'step',
      variant: 1
    });
    const sent = comm.sent.find(m => m.type === 'request_profile');
    expect(sent).toMatchObject({ fid: 3, qualname: 'step', variant: 1 });
    comm.receive({
      type: 'profile',
      req: sent.req,
      profile: { function: 'step', variant: 1 }
    });
    await expect(asked).resolves.toEqual({ function: 'step', variant: 1 });
    const failing = bridge.requestProfile({ variant: 9 });
    const again = comm.sent.filter(m => m.type === 'request_profile').pop();
    comm.receive({ type: 'profile', req: again.req, error: 'LookupError: no' });
    await expect(failing).rejects.toThrow('LookupError: no');
    bridge.dispose();
  });
});
