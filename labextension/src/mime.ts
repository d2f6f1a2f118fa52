/**
 * The MIME renderer extension for `application/vnd.jitmagic.dashboard+json`.
 * Other frontends fall back to the bundle's `image/png` and `text/plain`.
 *
 * A live dashboard (`%jit_dashboard --live`) names its kernel; the renderer finds that kernel's
 * model (kept in step by the panel's comm) and redraws from it while cells run. When the kernel
 * restarts or goes away it stops, says so, and keeps the last picture.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { renderDashboard } from './dashboard';
import { JitModel } from './model';
import { DASHBOARD_MIME, IDashboard } from './protocol';
import { registry } from './registry';

export class DashboardRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private _mimeType: string) {
    super();
    this.addClass('jp-JitDashboard-output');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._data = model.data[this._mimeType] as unknown as IDashboard;
    this._unfollow();
    const d = this._data;
    if (d && typeof d === 'object' && d.live && d.kernel_id) {
      this._kernelId = String(d.kernel_id);
      registry.modelsChanged.connect(this._find, this);
      this._find();
    }
    this._draw();
    return Promise.resolve();
  }

  dispose(): void {
    this._unfollow();
    super.dispose();
  }

  private _find(): void {
    const m = registry.models.get(this._kernelId) ?? null;
    if (m && m !== this._model) {
      this._model?.changed.disconnect(this._onChange, this);
      this._model = m;
      m.changed.connect(this._onChange, this);
      this._state.note = 'live: follows the kernel while cells run';
      this._draw();
    } else if (!m && this._model) {
      this._stop('live updates stopped: the kernel restarted or disconnected');
    }
  }

  private _onChange(m: JitModel): void {
    if (m.state !== 'connected' || m.kernelId !== this._kernelId) {
      this._stop('live updates stopped: the kernel restarted or disconnected');
      return;
    }
    if (!this._frame) {
      this._frame = requestAnimationFrame(() => {
        this._frame = 0;
        this._draw();
      });
    }
  }

  private _stop(note: string): void {
    this._unfollow();
    this._state.note = note;
    this._draw();
  }

  private _unfollow(): void {
    registry.modelsChanged.disconnect(this._find, this);
    this._model?.changed.disconnect(this._onChange, this);
    this._model = null;
    if (this._frame) {
      cancelAnimationFrame(this._frame);
      this._frame = 0;
    }
  }

  private _draw(): void {
    const m = this._model;
    const data: IDashboard | undefined = m
      ? { functions: m.functions, events: m.events, samples: m.samples }
      : this._data;
    this.node.dataset.live = m ? 'true' : 'false';
    renderDashboard(this.node, data, this._state);
  }

  private _data: IDashboard | undefined;
  private _kernelId = '';
  private _model: JitModel | null = null;
  private _state: { filter?: string; note?: string } = {};
  private _frame = 0;
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true, // builds DOM from text only, never from HTML strings
  mimeTypes: [DASHBOARD_MIME],
  createRenderer: options => new DashboardRenderer(options.mimeType)
};

const extension: IRenderMime.IExtension = {
  id: 'jitmagic:dashboard',
  description: 'Interactive charts for the jitmagic dashboard.',
  rendererFactory,
  rank: 0,
  dataType: 'json'
};

export default extension;
