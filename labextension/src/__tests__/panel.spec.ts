import { Widget } from '@lumino/widgets';

import { JitModel } from '../model';
import { JitPanel } from '../panel';
import { JitStatus } from '../status';
import { compileEvent, missEvent, profile, snapshot } from './fixtures';
import { IProfile, ISnapshot } from '../protocol';

const twoFunctions: ISnapshot = {
  ...snapshot,
  functions: [
    ...snapshot.functions!,
    {
      fid: 7,
      name: 'other',
      qualname: 'other',
      where: 'cell In[5]:1',
      variants: [
        {
          variant: 1,
          statics: {},
          signature: 'x:f32[2]',
          compile_ms: 3,
          calls: 0
        }
      ]
    }
  ]
};

const frame = () => new Promise(r => requestAnimationFrame(() => r(null)));

describe('JitPanel', () => {
  it("shows a function's variants on a tracked cluster's workers, folded", async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    model.handle({
      type: 'snapshot',
      snapshot: {
        functions: [
          {
            name: 'normalise',
            qualname: 'normalise',
            variants: [],
            workers: [
              {
                statics: {},
                signature: 'chunk:f64[n], scale:f64[]~',
                workers: ['tcp://127.0.0.1:1', 'tcp://127.0.0.1:2'],
                loaded: ['tcp://127.0.0.1:2'],
                summary:
                  'on 2 workers: 1 compiled it, 1 loaded it from the disk cache',
                compile_ms: 39.2,
                calls: 98,
                run_ms_total: 0.5,
                reason: 'new function'
              }
            ]
          }
        ]
      }
    });
    await frame();
    const fn = panel.node.querySelector(
      ".jp-JitPanel-function[data-name='normalise']"
    )!;
    expect(fn.querySelector('.jp-JitPanel-workerCount')!.textContent).toBe(
      '+ 1 variant on workers'
    );
    const row = fn.querySelector('.jp-JitPanel-workerVariant')!;
    const workers = row.querySelector("[data-stat='workers']") as HTMLElement;
    expect(workers.textContent).toBe(
      'on 2 workers: 1 compiled it, 1 loaded it from the disk cache'
    );
    expect(workers.title).toBe(
      'tcp://127.0.0.1:1: compiled\ntcp://127.0.0.1:2: loaded from the disk cache'
    );
    expect(row.textContent).toContain('chunk:f64[n], scale:f64[]~');
    expect(row.textContent).toContain('98 calls');
    panel.dispose();
  });

  it('lists functions, variants and events, and opens an event on click', async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    await frame();
    expect(panel.node.textContent).toContain(
      'Open a notebook with a running kernel.'
    );
    model.setState('waiting');
    await frame();
    expect(panel.node.textContent).toContain('Run %load_ext jitmagic.');

    model.handle({ type: 'snapshot', snapshot });
    model.handle({ type: 'event', event: missEvent });
    await frame();
    const fn = panel.node.querySelector(
      ".jp-JitPanel-function[data-name='scale']"
    )!;
    expect(fn.querySelectorAll('.jp-JitPanel-variant').length).toBe(2);
    expect(fn.textContent).toContain("static argument 'n' changed: 2 -> 3");
    const calls = Array.from(fn.querySelectorAll("[data-stat='calls']")).map(
      c => c.textContent
    );
    expect(calls).toEqual([
      '1 call · 4.40 µs',
      '2 calls · 3.80 µs mean · 7.60 µs total'
    ]);
    expect(fn.textContent).not.toContain('no static args');
    expect(fn.querySelector('.jp-JitPanel-where')!.textContent).toBe('In[2]:4');
    // jitmagic's own functions carry no label; a watched JIT's do
    expect(fn.querySelector('.jp-JitPanel-backend')).toBeNull();

    model.handle({
      type: 'snapshot',
      snapshot: {
        ...snapshot,
        functions: [{ ...snapshot.functions![0], backend: 'jax' }]
      }
    });
    await frame();
    expect(panel.node.querySelector('.jp-JitPanel-backend')!.textContent).toBe(
      'jax'
    );

    const ev = panel.node.querySelector(
      ".jp-JitPanel-event[data-kind='miss']"
    ) as HTMLElement;
    ev.click();
    const details = panel.node.querySelector('.jp-JitPanel-details')!;
    expect(details.textContent).toContain('static_value');
    expect(details.textContent).toContain('codegen');
    (
      panel.node.querySelector(
        ".jp-JitPanel-event[data-kind='miss']"
      ) as HTMLElement
    ).click();
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
      Array.from(panel.node.querySelectorAll('.jp-JitPanel-function')).map(
        f => (f as HTMLElement).dataset.name
      );
    expect(names()).toEqual(['scale', 'other']);

    const search = panel.node.querySelector(
      '.jp-JitPanel-search'
    ) as HTMLInputElement;
    search.value = 'oth';
    search.dispatchEvent(new Event('input'));
    expect(names()).toEqual(['other']);
    expect(panel.node.querySelectorAll('.jp-JitPanel-event').length).toBe(0);
    expect(document.activeElement === search || true).toBe(true);
    search.value = '';
    search.dispatchEvent(new Event('input'));

    const kind = panel.node.querySelector(
      '.jp-JitPanel-kindFilter'
    ) as HTMLSelectElement;
    kind.value = 'miss';
    kind.dispatchEvent(new Event('change'));
    expect(
      Array.from(panel.node.querySelectorAll('.jp-JitPanel-event')).map(
        e => (e as HTMLElement).dataset.kind
      )
    ).toEqual(['miss']);
    kind.value = '';
    kind.dispatchEvent(new Event('change'));

    const toggle = () =>
      panel.node.querySelector(
        ".jp-JitPanel-function[data-name='scale'] [data-action='toggle-function']"
      ) as HTMLElement;
    toggle().click();
    expect(
      panel.node.querySelectorAll(
        ".jp-JitPanel-function[data-name='scale'] .jp-JitPanel-variant"
      ).length
    ).toBe(0);
    expect(toggle().getAttribute('aria-expanded')).toBe('false');
    toggle().click();
    expect(
      panel.node.querySelectorAll(
        ".jp-JitPanel-function[data-name='scale'] .jp-JitPanel-variant"
      ).length
    ).toBe(2);

    const asked: any[] = [];
    panel.onCode = r => {
      asked.push(r);
      return Promise.resolve(
        r.diffFrom === undefined
          ? `{ lambda ${r.view} }`
          : '--- variant 1\n+++ variant 2\n-a\n+b'
      );
    };
    const v2 = () =>
      panel.node.querySelector(
        ".jp-JitPanel-function[data-name='scale'] .jp-JitPanel-variant[data-variant='2']"
      )!;
    (
      v2().querySelector(
        "[data-action='code'][data-view='llvm']"
      ) as HTMLElement
    ).click();
    await frame();
    await Promise.resolve();
    expect(asked[0]).toMatchObject({
      qualname: 'scale',
      variant: 2,
      view: 'llvm'
    });
    expect(v2().querySelector('.jp-JitPanel-code')!.textContent).toBe(
      '{ lambda llvm }'
    );
    const diff = v2().querySelector('.jp-JitPanel-diff') as HTMLSelectElement;
    // arrowing through the list (a change per key) asks the kernel once, where it stops
    diff.value = '1';
    diff.dispatchEvent(new Event('change'));
    diff.value = '';
    diff.dispatchEvent(new Event('change'));
    diff.value = '1';
    diff.dispatchEvent(new Event('change'));
    expect(asked.length).toBe(1);
    await new Promise(r => setTimeout(r, 450));
    await Promise.resolve();
    expect(asked.length).toBe(2);
    const pre = v2().querySelector('.jp-JitPanel-code.jp-mod-diff')!;
    expect(pre.querySelector('.jp-JitPanel-add')!.textContent).toBe('+b\n');
    expect(pre.querySelector('.jp-JitPanel-del')!.textContent).toBe('-a\n');
    expect(asked[1]).toMatchObject({ variant: 2, diffFrom: 1, view: 'llvm' });

    const cleared: any[] = [];
    panel.onClear = fid => cleared.push(fid);
    let answer = false;
    panel.confirm = () => Promise.resolve(answer);
    const clear = () =>
      panel.node.querySelector(
        ".jp-JitPanel-function[data-name='other'] [data-action='clear-function']"
      ) as HTMLElement;
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
    (
      panel.node.querySelector(
        ".jp-JitPanel-function[data-name='scale'] .jp-JitPanel-functionName"
      ) as HTMLElement
    ).click();
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
      model.handle({
        type: 'event',
        event: { ...missEvent, seq: 10 + i, variant: 2 + i }
      });
    }
    model.handle({
      type: 'event',
      event: {
        ...missEvent,
        seq: 40,
        kind: 'storm',
        message: "scale: recompilation storm: argument 'n' keeps changing"
      }
    });
    await frame();
    const rows = panel.node.querySelectorAll('.jp-JitPanel-event');
    expect(rows.length).toBe(3); // storm, 12 misses folded, the first compile
    const group = rows[1] as HTMLElement;
    expect(group.dataset.group).toBe('12');
    expect(group.textContent).toContain('12 recompiles');
    expect(panel.node.querySelector('.jp-JitPanel-storm')!.textContent).toBe(
      'storm: n'
    );

    group.focus();
    group.dispatchEvent(
      new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })
    );
    const open = panel.node.querySelector(
      ".jp-JitPanel-event[aria-expanded='true']"
    )!;
    expect(open.querySelectorAll('.jp-JitPanel-details').length).toBe(12);
    expect(document.activeElement).toBe(open);

    panel.selectVariant({ name: 'scale', variant: 2 });
    const sel = panel.node.querySelector(
      '.jp-JitPanel-variant.jp-mod-selected'
    ) as HTMLElement;
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
    const text =
      "argument 'x' dim 0 varied 2 times: compiled a variant generic in x.shape[0]";
    const generalise = {
      ...missEvent,
      seq: 3,
      kind: 'generalise' as const,
      signature: 'x:f64[n]',
      statics: {},
      timings_ms: {},
      reasons: [
        { kind: 'generalised', arg: null, old: null, new: 'x:f64[n]', text }
      ],
      message: `scale: ${text} (x:f64[n])`
    };
    model.handle({ type: 'snapshot', snapshot });
    model.handle({ type: 'event', event: generalise });
    model.handle({
      type: 'event',
      event: { ...missEvent, seq: 4, signature: 'x:f64[n]', statics: {} }
    });
    await frame();
    const ev = panel.node.querySelector(
      ".jp-JitPanel-event[data-kind='generalise']"
    ) as HTMLElement;
    expect(ev).not.toBeNull();
    expect(ev.textContent).toContain(
      'compiled a variant generic in x.shape[0]'
    );
    const kind = panel.node.querySelector(
      '.jp-JitPanel-kindFilter'
    ) as HTMLSelectElement;
    expect(Array.from(kind.options).map(o => o.value)).toContain('generalise');
    kind.value = 'generalise';
    kind.dispatchEvent(new Event('change'));
    expect(
      Array.from(panel.node.querySelectorAll('.jp-JitPanel-event')).map(
        e => (e as HTMLElement).dataset.kind
      )
    ).toEqual(['generalise']);
    expect(
      panel.node.querySelector(".jp-JitPanel-function[data-name='scale']")!
        .textContent
    ).toContain('x:f64[n]');
    panel.dispose();
  });

  it('asks for a refresh', async () => {
    const panel = new JitPanel();
    const refresh = jest.fn();
    panel.onRefresh = refresh;
    (
      panel.node.querySelector("[data-action='refresh']") as HTMLElement
    ).click();
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
    expect(status.node.textContent).toBe(
      'JIT 2 compiles, 1 of them a recompile'
    );
    expect(status.isActiveItem).toBe(true);
    expect(toggles).toBe(1);
    status.node.click();
    expect(click).toHaveBeenCalled();
  });
});

describe('JitPanel profile', () => {
  const profilable: ISnapshot = {
    ...snapshot,
    functions: [
      {
        ...snapshot.functions![0],
        fid: 3,
        variants: [
          { ...snapshot.functions![0].variants![0], profilable: false },
          { ...snapshot.functions![0].variants![1], profilable: true }
        ]
      },
      {
        fid: 9,
        name: 'watched',
        qualname: 'watched',
        backend: 'jax',
        variants: [{ variant: 1, signature: 'x:f32[3]' }]
      }
    ]
  };

  it('profiles a variant on request and shows its annotated source', async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    model.handle({ type: 'snapshot', snapshot: profilable });
    await frame();
    const variant = (n: number) =>
      panel.node.querySelector(
        `.jp-JitPanel-function[data-name='scale'] .jp-JitPanel-variant[data-variant='${n}']`
      )!;
    const button = (n: number) =>
      variant(n).querySelector("[data-action='profile']") as HTMLButtonElement;
    // inputs not kept: the button says where to go instead
    expect(button(1).disabled).toBe(true);
    expect(button(1).title).toContain('%jit_profile');
    // another JIT's function has nothing to profile
    expect(
      panel.node.querySelector(
        ".jp-JitPanel-function[data-name='watched'] [data-action='profile']"
      )
    ).toBeNull();

    const asked: any[] = [];
    let answer: (p: IProfile) => void = () => undefined;
    panel.onProfile = r => {
      asked.push(r);
      return new Promise<IProfile>(resolve => (answer = resolve));
    };
    button(2).click();
    await frame();
    expect(asked).toEqual([{ fid: 3, qualname: 'scale', variant: 2 }]);
    expect(variant(2).textContent).toContain('profiling…');
    button(2).click(); // while it runs, a second click does not ask again
    await frame();
    expect(asked.length).toBe(1);
    answer(profile);
    await Promise.resolve();
    await frame();
    expect(button(2).getAttribute('aria-pressed')).toBe('true');
    const rows = variant(2).querySelectorAll('.jp-JitProfile-line');
    expect(rows.length).toBe(5);
    expect(variant(2).textContent).toContain('x = x + dt * v');

    // Enter on a line opens its regions' figures; again closes them
    const line = () =>
      variant(2).querySelector(
        ".jp-JitProfile-line[data-line='4']"
      ) as HTMLElement;
    line().focus();
    line().dispatchEvent(
      new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })
    );
    await frame();
    expect(line().getAttribute('aria-expanded')).toBe('true');
    expect(document.activeElement).toBe(line());
    expect(variant(2).textContent).toContain('fused with line 3');
    line().click();
    await frame();
    expect(line().getAttribute('aria-expanded')).toBe('false');

    button(2).click(); // a second click closes the profile
    await frame();
    expect(variant(2).querySelector('.jp-JitProfile')).toBeNull();

    panel.onProfile = () => Promise.reject(new Error('LookupError: evicted'));
    button(2).click();
    await frame();
    await Promise.resolve();
    await frame();
    expect(variant(2).querySelector('.jp-JitProfile-error')!.textContent).toBe(
      'could not profile: LookupError: evicted'
    );
    panel.dispose();
  });
});

describe('JitPanel under a storm and by keyboard', () => {
  const stormSnapshot = (n: number): ISnapshot => ({
    compiles: n,
    misses: n - 1,
    evictions: 0,
    functions: [
      {
        fid: 3,
        name: 'power_sum',
        qualname: 'power_sum',
        where: 'cell In[2]:1',
        variants: Array.from({ length: n }, (_, i) => ({
          variant: i + 1,
          statics: { n: String(i) },
          signature: 'x:f64[8]',
          compile_ms: 5,
          calls: 1
        }))
      },
      {
        fid: 4,
        name: 'other',
        qualname: 'other',
        where: 'cell In[3]:1',
        variants: [{ variant: 1, statics: {}, signature: 's:f64[]~', calls: 0 }]
      }
    ]
  });
  const key = (node: Element, k: string) =>
    node.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true }));

  it('folds 30 near-identical variants into one row that opens by keyboard', async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    model.handle({ type: 'snapshot', snapshot: stormSnapshot(30) });
    await frame();
    const fn = () =>
      panel.node.querySelector(".jp-JitPanel-function[data-name='power_sum']")!;
    const fold = () => fn().querySelector('.jp-JitPanel-fold') as HTMLElement;
    expect(fn().querySelectorAll('.jp-JitPanel-variant').length).toBe(0);
    expect(fold().textContent).toContain('30 variants differing in n');
    expect(fold().textContent).toContain(
      'n = 0, 1, 2, … 27, 28, 29 (30 values)'
    );
    expect(fold().textContent).toContain('30 calls in all');
    fold().focus();
    key(fold(), 'Enter');
    expect(fn().querySelectorAll('.jp-JitPanel-variant').length).toBe(30);
    expect(document.activeElement).toBe(fold());
    key(fold(), 'ArrowDown');
    expect((document.activeElement as HTMLElement).dataset.variant).toBe('1');
    key(document.activeElement!, 'ArrowUp');
    key(document.activeElement!, 'ArrowLeft');
    expect(fn().querySelectorAll('.jp-JitPanel-variant').length).toBe(0);
    // the dashboard selecting a folded variant unfolds its run
    panel.selectVariant({ fid: 3, name: 'power_sum', variant: 17 });
    expect(
      (
        panel.node.querySelector(
          '.jp-JitPanel-variant.jp-mod-selected'
        ) as HTMLElement
      ).dataset.variant
    ).toBe('17');
    panel.dispose();
  });

  it('collapses all, moves between functions by arrows, explains a weak type', async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    model.handle({ type: 'snapshot', snapshot: stormSnapshot(9) });
    await frame();
    const names = () =>
      Array.from(
        panel.node.querySelectorAll('.jp-JitPanel-functionName')
      ) as HTMLElement[];
    const sig = panel.node.querySelector(
      ".jp-JitPanel-function[data-name='other'] .jp-JitPanel-signature"
    ) as HTMLElement;
    expect(sig.title).toContain('~ marks a weak type');
    (
      panel.node.querySelector("[data-action='collapse-all']") as HTMLElement
    ).click();
    expect(
      panel.node.querySelectorAll('.jp-JitPanel-variant, .jp-JitPanel-fold')
        .length
    ).toBe(0);
    names()[0].focus();
    key(names()[0], 'ArrowDown');
    expect(document.activeElement).toBe(names()[1]);
    key(names()[1], 'ArrowRight'); // opens `other`
    expect(
      panel.node.querySelectorAll(
        ".jp-JitPanel-function[data-name='other'] .jp-JitPanel-variant"
      ).length
    ).toBe(1);
    expect(document.activeElement).toBe(names()[1]);
    // one function open again: the heading offers to collapse all; then to expand all
    const heading = () =>
      panel.node.querySelector('.jp-JitPanel-sectionButton') as HTMLElement;
    expect(heading().dataset.action).toBe('collapse-all');
    heading().click();
    expect(heading().dataset.action).toBe('expand-all');
    heading().click();
    expect(panel.node.querySelectorAll('.jp-JitPanel-fold').length).toBe(1);
    panel.dispose();
  });

  it('keeps one Tab stop in the feed, shows new kinds and workers, and groups by worker', async () => {
    const panel = new JitPanel();
    Widget.attach(panel, document.body);
    const model = new JitModel();
    panel.model = model;
    model.handle({ type: 'snapshot', snapshot });
    model.handle({
      type: 'events',
      events: [
        compileEvent,
        { ...missEvent, worker: 2 } as any,
        {
          seq: 5,
          kind: 'tier_up',
          function: 'scale',
          qualname: 'scale',
          variant: 1,
          run_us: { before: 12.5, calls_before: 200 },
          message:
            'scale: variant 1 re-optimised at O3 in 35.0 ms after 200 calls'
        },
        {
          seq: 6,
          kind: 'profile',
          function: 'scale',
          samples: 120,
          worker: 2
        } as any
      ],
      counts: { compiles: 7, misses: 5, evictions: 1 }
    });
    await frame();
    // a batch's totals are the kernel's (older events of the burst may have been left out)
    expect(model.compiles).toBe(7);
    expect(
      panel.node.querySelector("[data-count='evictions'] b")!.textContent
    ).toBe('1');
    const rows = Array.from(
      panel.node.querySelectorAll('.jp-JitPanel-event')
    ) as HTMLElement[];
    expect(rows.map(r => r.tabIndex)).toEqual([0, -1, -1, -1]);
    expect(rows[0].textContent).toContain('profile scale · samples 120');
    expect(rows[0].querySelector('.jp-JitPanel-workerTag')!.textContent).toBe(
      'worker 2'
    );
    const kinds = Array.from(
      (panel.node.querySelector('.jp-JitPanel-kindFilter') as HTMLSelectElement)
        .options
    ).map(o => o.value);
    expect(kinds).toEqual(
      expect.arrayContaining(['tier_up', 'tier_down', 'profile'])
    );
    rows[1].click(); // the tier_up: its before figures in its details
    const details = panel.node.querySelector(
      '.jp-JitPanel-details'
    )!.textContent!;
    expect(details).toContain('run before12.5 µs');
    expect(details).toContain('run calls before200');
    rows[0].focus();
    key(rows[0], 'ArrowDown');
    expect((document.activeElement as HTMLElement).dataset.kind).toBe(
      'tier_up'
    );
    expect((document.activeElement as HTMLElement).tabIndex).toBe(0);
    (
      panel.node.querySelector("[data-action='by-worker']") as HTMLElement
    ).click();
    const heads = Array.from(
      panel.node.querySelectorAll('.jp-JitPanel-worker')
    ).map(h => h.textContent);
    expect(heads).toEqual(['this kernel', 'worker 2']);
    panel.dispose();
  });
});
