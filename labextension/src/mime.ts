/**
 * The MIME renderer extension for `application/vnd.jitmagic.dashboard+json`.
 * Other frontends fall back to the bundle's `image/png` and `text/plain`.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { renderDashboard } from './dashboard';
import { DASHBOARD_MIME, IDashboard } from './protocol';

export class DashboardRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private _mimeType: string) {
    super();
    this.addClass('jp-JitDashboard-output');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    renderDashboard(this.node, model.data[this._mimeType] as unknown as IDashboard);
    return Promise.resolve();
  }
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
