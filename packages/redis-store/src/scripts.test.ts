import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadScripts, withoutUncalledFunctions } from './scripts.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lua-'));
  mkdirSync(join(dir, 'includes'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const write = (path: string, text: string) => writeFileSync(join(dir, path), text);
const load = () => loadScripts(pathToFileURL(`${dir}/`));

describe('loadScripts', () => {
  it('names each command after its file and takes the number of keys from it', () => {
    write('do-something-2.lua', 'return 1\n');
    write('notes.txt', 'not a script');

    expect(load()).toEqual([{ name: 'doSomething', numberOfKeys: 2, lua: 'return 1\n' }]);
  });

  it('puts an included file where its directive stands, resolving its own includes relative to it', () => {
    write('includes/inner.lua', 'local function inner() return 2 end\n');
    write('includes/outer.lua', '--@include "inner.lua"\nlocal function outer() return inner() end\n');
    write('run-0.lua', '-- header\n--@include "includes/outer.lua"\nreturn outer()\n');

    expect(load()[0]!.lua).toBe(
      '-- header\nlocal function inner() return 2 end\nlocal function outer() return inner() end\nreturn outer()\n',
    );
  });

  it('inlines a file included twice only once, so its locals are declared once', () => {
    write('includes/shared.lua', 'local function shared() return 1 end\n');
    write('includes/other.lua', '--@include "shared.lua"\nlocal function other() return shared() end\n');
    write('run-0.lua', '--@include "includes/shared.lua"\n--@include "includes/other.lua"\nreturn other()\n');

    expect(load()[0]!.lua).toBe('local function shared() return 1 end\n\nlocal function other() return shared() end\nreturn other()\n');
  });

  it('fails the load on an include that does not exist, naming the line', () => {
    write('run-0.lua', 'local x = 1\n--@include "includes/missing.lua"\n');

    expect(load).toThrow(/run-0\.lua:2: no such include: .*includes\/missing\.lua/);
  });

  it('fails the load on an include cycle', () => {
    write('includes/a.lua', '--@include "b.lua"\n');
    write('includes/b.lua', '--@include "a.lua"\n');
    write('run-0.lua', '--@include "includes/a.lua"\n');

    expect(load).toThrow(/include cycle: .*run-0\.lua -> .*a\.lua -> .*b\.lua -> .*a\.lua/);
  });

  it('fails the load on a directive it does not know, rather than leaving it as a comment', () => {
    write('run-0.lua', '--@include includes/a.lua\n');

    expect(load).toThrow(/run-0\.lua:1: not an include directive/);
  });

  it('inlines a file where its directive stands inside a block, and fails the load on an indented one', () => {
    write('includes/rare.lua', 'local function rare()\n  return 2\nend\n');
    write('run-0.lua', 'if KEYS[1] then\n--@include "includes/rare.lua"\n  return rare()\nend\nreturn 1\n');
    expect(load()[0]!.lua).toBe('if KEYS[1] then\nlocal function rare()\n  return 2\nend\n  return rare()\nend\nreturn 1\n');

    write('run-0.lua', 'if KEYS[1] then\n  --@include "includes/rare.lua"\n  return rare()\nend\n');
    expect(load).toThrow(/run-0\.lua:2: a directive starts its line, even inside a block/);
  });

  it('leaves out the functions of its includes that the script never calls, and those only they call', () => {
    write(
      'includes/lib.lua',
      [
        'local function helper(x)',
        '  return x + 1',
        'end',
        '',
        'local function unused(x)',
        '  return helper(x) * 2',
        'end',
        '',
        'local function used(x)',
        '  return helper(x)',
        'end',
        '',
      ].join('\n'),
    );
    write('run-0.lua', '--@include "includes/lib.lua"\nreturn used(1)\n');

    expect(load()[0]!.lua).toBe(
      [
        'local function helper(x)',
        '  return x + 1',
        'end',
        '',
        '',
        'local function used(x)',
        '  return helper(x)',
        'end',
        'return used(1)',
        '',
      ].join('\n'),
    );
  });

  it('keeps a function in any other shape than an indented body closed by `end` alone, and one a comment names', () => {
    const oneLine = 'local function a() return 1 end\nlocal x = 2\nif x then\n  x = 3\nend\nreturn x\n';
    expect(withoutUncalledFunctions(oneLine)).toBe(oneLine);
    // Inside a block, the block's own indented lines and `end` are not taken for the function's body.
    const oneLineInBlock = 'if KEYS[1] then\nlocal function c() return 1 end\n  return c()\nend\nreturn 2\n';
    expect(withoutUncalledFunctions(oneLineInBlock)).toBe(oneLineInBlock);
    const named = '-- b() is kept for later\nlocal function b()\n  return 1\nend\nreturn 2\n';
    expect(withoutUncalledFunctions(named)).toBe(named);
  });

  it("leaves no directive in the project's own scripts, and shares the consumer group's creation", () => {
    const scripts = loadScripts(new URL('./lua/', import.meta.url));

    expect(scripts.map((script) => script.name).sort()).toEqual([
      'admitQueue',
      'applyControls',
      'deadLetter',
      'heldPayments',
      'joinQueue',
      'memoryLimit',
      'publishSale',
      'queuePlace',
      'rebuildSale',
      'receivePayment',
      'recordPaid',
      'reserve',
      'restoreClosed',
      'returnUnits',
      'setPaused',
      'showUp',
      'snapshotSale',
      'trimAcknowledged',
      'withdrawSale',
    ]);
    for (const { lua } of scripts) expect(lua).not.toMatch(/^--@/m);
    // The hot path's script defines only what it calls off its accepted path (one closure made per call for each).
    const reserve = scripts.find((script) => script.name === 'reserve')!.lua;
    const defined = [...reserve.matchAll(/^local function ([a-z_]+)\(/gm)].map((match) => match[1]).sort();
    expect(defined).toEqual(['rebuy_refusal', 'running_turn', 'sale_terms_of_fields', 'show_up', 'use_turn']);
    const creatingGroups = scripts.filter(({ lua }) => lua.includes("'XGROUP', 'CREATE'"));
    expect(creatingGroups.map((script) => script.name).sort()).toEqual(['publishSale', 'rebuildSale']);
    for (const { lua } of creatingGroups) expect(lua).toContain('local function ensure_group(stream, group)');
  });
});
