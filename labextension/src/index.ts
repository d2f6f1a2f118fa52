/**
 * jitmagic for JupyterLab: the "JIT" side panel and the status bar item,
 * both following the active notebook. The dashboard renderer is in mime.ts.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  Dialog,
  ICommandPalette,
  ISessionContext,
  showDialog
} from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IStatusBar } from '@jupyterlab/statusbar';

import { KernelBridge } from './connection';
import { jitIcon } from './icon';
import { JitPanel } from './panel';
import { JitStatus } from './status';
import { cellNumber } from './format';
import { registry } from './registry';

const OPEN = 'jitmagic:open-panel';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jitmagic:plugin',
  description:
    'Live view of jitmagic compilations: side panel and status bar item.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IStatusBar, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    statusBar: IStatusBar | null,
    palette: ICommandPalette | null
  ) => {
    const bridges = new Map<
      ISessionContext,
      { bridge: KernelBridge; views: number }
    >();
    const panel = new JitPanel();
    panel.title.icon = jitIcon;
    panel.title.label = 'JIT';
    app.shell.add(panel, 'right', { rank: 900 });

    app.commands.addCommand(OPEN, {
      label: 'Show the JIT panel',
      caption: 'jitmagic: compilations of the active notebook',
      execute: () => app.shell.activateById(panel.id)
    });
    palette?.addItem({ command: OPEN, category: 'jitmagic' });

    const status = new JitStatus(() => void app.commands.execute(OPEN));
    statusBar?.registerStatusItem('jitmagic:status', {
      item: status,
      align: 'left',
      rank: 5,
      isActive: () => status.isActiveItem,
      activeStateChanged: status.activeStateChanged
    });

    // every notebook session gets a bridge, so its kernel accepts the jitmagic
    // comm even while another notebook is active; views of one notebook share it
    const add = (nb: NotebookPanel) => {
      const session = nb.sessionContext;
      let entry = bridges.get(session);
      if (!entry) {
        entry = { bridge: new KernelBridge(session), views: 0 };
        bridges.set(session, entry);
      }
      entry.views += 1;
      nb.disposed.connect(() => {
        entry!.views -= 1;
        if (entry!.views === 0) {
          bridges.delete(session);
          entry!.bridge.dispose();
        }
        follow();
      });
      follow();
    };

    const follow = () => {
      const nb = notebooks.currentWidget;
      const bridge = nb
        ? (bridges.get(nb.sessionContext)?.bridge ?? null)
        : null;
      panel.model = bridge?.model ?? null;
      panel.source = nb?.context.path ?? '';
      panel.onRefresh = bridge ? () => bridge.refresh() : null;
      panel.onCode = bridge ? r => bridge.requestCode(r) : null;
      panel.onProfile = bridge ? r => bridge.requestProfile(r) : null;
      panel.onClear = bridge ? fid => bridge.clearCache(fid) : null;
      panel.onJump = nb ? where => jumpToCell(nb, where) : null;
      status.model = bridge?.model ?? null;
    };
    panel.confirm = async message => {
      const result = await showDialog({
        title: 'Clear the JIT cache',
        body: message,
        buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Clear' })]
      });
      return result.button.accept;
    };
    registry.selectVariant = ref => {
      app.shell.activateById(panel.id);
      panel.selectVariant(ref);
    };
    notebooks.widgetAdded.connect((_, nb) => add(nb));
    notebooks.currentChanged.connect(follow);
    notebooks.forEach(add);
    follow();
  }
};

/** Scroll to the code cell that ran as In[n] and flash it; false when no such cell. */
function jumpToCell(nb: NotebookPanel, where: string): boolean {
  const n = cellNumber(where);
  if (n === null) {
    return false;
  }
  const cells = nb.content.widgets;
  const index = cells.findIndex(
    c => c.model.type === 'code' && (c.model as any).executionCount === n
  );
  if (index < 0) {
    return false;
  }
  nb.content.activeCellIndex = index;
  const cell = cells[index];
  void nb.content.scrollToItem(index, 'center');
  cell.node.classList.add('jp-JitPanel-jumped');
  setTimeout(() => cell.node.classList.remove('jp-JitPanel-jumped'), 2000);
  return true;
}

export default plugin;
