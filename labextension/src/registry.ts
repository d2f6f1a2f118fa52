/**
 * What the side panel and the dashboard outputs share inside one page: the model of each
 * kernel (a live dashboard finds its kernel's model by the id the kernel reported) and the
 * panel's "select this variant" hook (a click on a dashboard mark).
 */
import { ISignal, Signal } from '@lumino/signaling';

import { JitModel } from './model';

export interface IVariantRef {
  fid?: number;
  name: string;
  variant: number | null;
}

class Registry {
  /** kernel id -> model; set by the kernel bridges when a kernel says hello */
  readonly models = new Map<string, JitModel>();

  get modelsChanged(): ISignal<this, void> {
    return this._modelsChanged;
  }

  setModel(kernelId: string, model: JitModel | null): void {
    if (!kernelId) {
      return;
    }
    if (model) {
      this.models.set(kernelId, model);
    } else {
      this.models.delete(kernelId);
    }
    this._modelsChanged.emit();
  }

  /** Set by the plugin: reveal a variant in the panel. */
  selectVariant: ((ref: IVariantRef) => void) | null = null;

  private _modelsChanged = new Signal<this, void>(this);
}

export const registry = new Registry();
