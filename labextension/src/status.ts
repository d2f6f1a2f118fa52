/**
 * JitStatus: `JIT 12 compiles · 3 misses` in the status bar; a click opens the panel.
 */
import { Widget } from '@lumino/widgets';
import { ISignal, Signal } from '@lumino/signaling';

import { statusText } from './format';
import { JitModel } from './model';

export class JitStatus extends Widget {
  constructor(onClick: () => void) {
    super();
    this.addClass('jp-JitStatus');
    this.node.title = 'jitmagic: open the JIT panel';
    this.node.addEventListener('click', onClick);
    this._update();
  }

  /** Emits when the item should appear or disappear. */
  get activeStateChanged(): ISignal<this, void> {
    return this._activeStateChanged;
  }

  /** Shown only while the active notebook's kernel has jitmagic loaded. */
  get isActiveItem(): boolean {
    return this._model?.state === 'connected';
  }

  set model(model: JitModel | null) {
    if (model === this._model) {
      return;
    }
    this._model?.changed.disconnect(this._update, this);
    this._model = model;
    model?.changed.connect(this._update, this);
    this._update();
  }

  dispose(): void {
    this._model?.changed.disconnect(this._update, this);
    super.dispose();
  }

  private _update(): void {
    const m = this._model;
    this.node.textContent = m ? statusText(m.compiles, m.misses) : 'JIT';
    const active = this.isActiveItem;
    if (active !== this._wasActive) {
      this._wasActive = active;
      this._activeStateChanged.emit();
    }
  }

  private _model: JitModel | null = null;
  private _wasActive = false;
  private _activeStateChanged = new Signal<this, void>(this);
}
