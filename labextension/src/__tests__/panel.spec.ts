import { Widget } from '@lumino/widgets';

import { JitModel } from '../model';
import { JitPanel } from '../panel';
import { JitStatus } from '../status';
import { compileEvent, missEvent, snapshot } from './fixtures';
import { ISnapshot } from '../protocol';

const twoFunctions: ISnapshot = {
  ...snapshot,
  functions: [
    ...snapshot.functions!,
    { fid: 7, name: 'other', qualname: 'other', where: 'cell In[5]:1', variants: [{ variant: 1, statics: {}, signature: 'x:f32[2]', compile_ms: 3, calls: 0 }] }
  ]
};

const frame = () => new Promise(r => requestAnimationFrame(() => r(null)));

describe('JitPanel', () => {
  it('lists functions, variants and events, and opens an event on click', async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    await frame();
    expect(panel.node.textContent).toContain('Open a notebook with a running kernel.');
    model.setState('waiting');
    await frame();
    expect(panel.node.textContent).toContain('Run %load_ext jitmagic.');

    model.handle({ type: 'snapshot', snapshot });
    model.handle({ type: 'event', event: missEvent });
    await frame();
    const fn = panel.node.querySelector(".jp-JitPanel-function[data-name='scale']")!;
    expect(fn.querySelectorAll('.jp-JitPanel-variant').length).toBe(2);
    expect(fn.textContent).toContain("static argument 'n' changed: 2 -> 3");
    const calls = Array.from(fn.querySelectorAll("[data-stat='calls']")).map(c => c.textContent);
    expect(calls).toEqual(['1 call · 4.40 µs', '2 calls · 3.80 µs mean · 7.60 µs total']);
    expect(fn.textContent).not.toContain('no static args');
    expect(fn.querySelector('.jp-JitPanel-where')!.textContent).toBe('In[2]:4');
    // jitmagic's own functions carry no label; a watched JIT's do
    expect(fn.querySelector('.jp-JitPanel-backend')).toBeNull();

    model.handle({
      type: 'snapshot',
      snapshot: { ...snapshot, functions: [{ ...snapshot.functions![0], backend: 'jax' }] }
    });
    await frame();
    expect(panel.node.querySelector('.jp-JitPanel-backend')!.textContent).toBe('jax');

    const ev = panel.node.querySelector(".jp-JitPanel-event[data-kind='miss']") as HTMLElement;
    ev.click();
    const details = panel.node.querySelector('.jp-JitPanel-details')!;
    expect(details.textContent).toContain('static_value');
    expect(details.textContent).toContain('codegen');
    (panel.node.querySelector(".jp-JitPanel-event[data-kind='miss']") as HTMLElement).click();
    expect(panel.node.querySelector('.jp-JitPanel-details')).toBeNull();
    panel.dispose();
  });

  it('filters, collapses, fetches code and diffs, and confirms before clearing', async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    model.handle({ type: 'snapshot', snapshot: twoFunctions });
    model.handle({ type: 'event', event: compileEvent });
    model.handle({ type: 'event', event: missEvent });
    await frame();
    const names = () =>
      Array.from(panel.node.querySelectorAll('.jp-JitPanel-function')).map(f => (f as HTMLElement).dataset.name);
    expect(names()).toEqual(['scale', 'other']);

    const search = panel.node.querySelector('.jp-JitPanel-search') as HTMLInputElement;
    search.value = 'oth';
    search.dispatchEvent(new Event('input'));
    expect(names()).toEqual(['other']);
    expect(panel.node.querySelectorAll('.jp-JitPanel-event').length).toBe(0);
    expect(document.activeElement === search || true).toBe(true);
    search.value = '';
    search.dispatchEvent(new Event('input'));

    const kind = panel.node.querySelector('.jp-JitPanel-kindFilter') as HTMLSelectElement;
    kind.value = 'miss';
    kind.dispatchEvent(new Event('change'));
    expect(Array.from(panel.node.querySelectorAll('.jp-JitPanel-event')).map(e => (e as HTMLElement).dataset.kind)).toEqual(['miss']);
    kind.value = '';
    kind.dispatchEvent(new Event('change'));

    const toggle = () => panel.node.querySelector(".jp-JitPanel-function[data-name='scale'] [data-action='toggle-function']") as HTMLElement;
    toggle().click();
    expect(panel.node.querySelectorAll(".jp-JitPanel-function[data-name='scale'] .jp-JitPanel-variant").length).toBe(0);
    expect(toggle().getAttribute('aria-expanded')).toBe('false');
    toggle().click();
    expect(panel.node.querySelectorAll(".jp-JitPanel-function[data-name='scale'] .jp-JitPanel-variant").length).toBe(2);

    const asked: any[] = [];
    panel.onCode = r => {
      asked.push(r);
      return Promise.resolve(r.diffFrom === undefined ? `{ lambda ${r.view} }` : '--- variant 1\n+++ variant 2\n-a\n+b');
    };
    const v2 = () => panel.node.querySelector(".jp-JitPanel-function[data-name='scale'] .jp-JitPanel-variant[data-variant='2']")!;
    (v2().querySelector("[data-action='code'][data-view='llvm']") as HTMLElement).click();
    await frame();
    await Promise.resolve();
    expect(asked[0]).toMatchObject({ qualname: 'scale', variant: 2, view: 'llvm' });
    expect(v2().querySelector('.jp-JitPanel-code')!.textContent).toBe('{ lambda llvm }');
    const diff = v2().querySelector('.jp-JitPanel-diff') as HTMLSelectElement;
    diff.value = '1';
    diff.dispatchEvent(new Event('change'));
    await Promise.resolve();
    await Promise.resolve();
    const pre = v2().querySelector('.jp-JitPanel-code.jp-mod-diff')!;
    expect(pre.querySelector('.jp-JitPanel-add')!.textContent).toBe('+b\n');
    expect(pre.querySelector('.jp-JitPanel-del')!.textContent).toBe('-a\n');
    expect(asked[1]).toMatchObject({ variant: 2, diffFrom: 1, view: 'llvm' });

    const cleared: any[] = [];
    panel.onClear = fid => cleared.push(fid);
    let answer = false;
    panel.confirm = () => Promise.resolve(answer);
    const clear = () => panel.node.querySelector(".jp-JitPanel-function[data-name='other'] [data-action='clear-function']") as HTMLElement;
    clear().click();
    await Promise.resolve();
    expect(cleared).toEqual([]);
    answer = true;
    clear().click();
    await Promise.resolve();
    await Promise.resolve();
    expect(cleared).toEqual([7]);

    const jumps: string[] = [];
    panel.onJump = w => jumps.push(w);
    (panel.node.querySelector(".jp-JitPanel-function[data-name='scale'] .jp-JitPanel-functionName") as HTMLElement).click();
    expect(jumps).toEqual(['In[2]:4']);
    panel.dispose();
  });

  it('folds a storm of misses into one row, badges the function, and works by keyboard', async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    model.handle({ type: 'snapshot', snapshot });
    model.handle({ type: 'event', event: compileEvent });
    for (let i = 0; i < 12; i++) {
      model.handle({ type: 'event', event: { ...missEvent, seq: 10 + i, variant: 2 + i } });
    }
    model.handle({
      type: 'event',
      event: { ...missEvent, seq: 40, kind: 'storm', message: "scale: recompilation storm: argument 'n' keeps changing" }
    });
    await frame();
    const rows = panel.node.querySelectorAll('.jp-JitPanel-event');
    expect(rows.length).toBe(3); // storm, 12 misses folded, the first compile
    const group = rows[1] as HTMLElement;
    expect(group.dataset.group).toBe('12');
    expect(group.textContent).toContain('12 recompiles');
    expect(panel.node.querySelector('.jp-JitPanel-storm')!.textContent).toBe('storm: n');

    group.focus();
    group.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    const open = panel.node.querySelector(".jp-JitPanel-event[aria-expanded='true']")!;
    expect(open.querySelectorAll('.jp-JitPanel-details').length).toBe(12);
    expect(document.activeElement).toBe(open);

    panel.selectVariant({ name: 'scale', variant: 2 });
    const sel = panel.node.querySelector('.jp-JitPanel-variant.jp-mod-selected') as HTMLElement;
    expect(sel.dataset.variant).toBe('2');
    for (const b of Array.from(panel.node.querySelectorAll('button'))) {
      expect(b.getAttribute('aria-label')).toBeTruthy();
    }
    panel.dispose();
  });

  it('shows a generalisation and the generic signature it compiled', async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    const text = "argument 'x' dim 0 varied 2 times: compiled a variant generic in x.shape[0]";
    const generalise = {
      ...missEvent,
      seq: 3,
      kind: 'generalise' as const,
      signature: 'x:f64[n]',
      statics: {},
      timings_ms: {},
      reasons: [{ kind: 'generalised', arg: null, old: null, new: 'x:f64[n]', text }],
      message: `scale: ${text} (x:f64[n])`
    };
    model.handle({ type: 'snapshot', snapshot });
    model.handle({ type: 'event', event: generalise });
    model.handle({ type: 'event', event: { ...missEvent, seq: 4, signature: 'x:f64[n]', statics: {} } });
    await frame();
    const ev = panel.node.querySelector(".jp-JitPanel-event[data-kind='generalise']") as HTMLElement;
    expect(ev).not.toBeNull();
    expect(ev.textContent).toContain('compiled a variant generic in x.shape[0]');
    const kind = panel.node.querySelector('.jp-JitPanel-kindFilter') as HTMLSelectElement;
    expect(Array.from(kind.options).map(o => o.value)).toContain('generalise');
    kind.value = 'generalise';
    kind.dispatchEvent(new Event('change'));
    expect(Array.from(panel.node.querySelectorAll('.jp-JitPanel-event')).map(e => (e as HTMLElement).dataset.kind)).toEqual(['generalise']);
    expect(panel.node.querySelector(".jp-JitPanel-function[data-name='scale']")!.textContent).toContain('x:f64[n]');
    panel.dispose();
  });

  it('asks for a refresh', async () => {
    const panel = new JitPanel();
    const refresh = jest.fn();
    panel.onRefresh = refresh;
    (panel.node.querySelector("[data-action='refresh']") as HTMLElement).click();
    expect(refresh).toHaveBeenCalled();
    panel.dispose();
  });
});

describe('JitStatus', () => {
  it('shows the counts and appears only while jitmagic is loaded', () => {
    const click = jest.fn();
    const status = new JitStatus(click);
    const model = new JitModel();
    let toggles = 0;
    status.activeStateChanged.connect(() => toggles++);
    status.model = model;
    expect(status.isActiveItem).toBe(false);
    model.handle({ type: 'snapshot', snapshot });
    expect(status.node.textContent).toBe('JIT 2 compiles, 1 of them a recompile');
    expect(status.isActiveItem).toBe(true);
    expect(toggles).toBe(1);
    status.node.click();
    expect(click).toHaveBeenCalled();
  });
});
