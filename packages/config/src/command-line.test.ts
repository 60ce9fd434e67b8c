import { describe, expect, it } from 'vitest';
import { readCommandLine, UsageError } from './command-line.ts';

const COMMAND = {
  usage: 'usage: npm run example -- [--sale <id>] [--keep] <what>',
  options: { sale: { type: 'string' }, keep: { type: 'boolean', default: false } },
  allowPositionals: true,
} as const;

describe('readCommandLine', () => {
  it('reads options, their defaults and positionals', () => {
    expect(readCommandLine(COMMAND, ['--sale', '3', 'list'])).toEqual({ values: { sale: '3', keep: false }, positionals: ['list'] });
    expect(readCommandLine(COMMAND, ['--sale=4', '--keep'])).toEqual({ values: { sale: '4', keep: true }, positionals: [] });
  });

  it('answers help for --help or -h, wherever they stand', () => {
    expect(readCommandLine(COMMAND, ['--help'])).toBe('help');
    expect(readCommandLine(COMMAND, ['list', '-h'])).toBe('help');
    expect(readCommandLine({ usage: 'usage: npm run bare' }, ['--help'])).toBe('help');
  });

  it('refuses an unknown option, a missing value and a positional a command does not take, saying which', () => {
    expect(() => readCommandLine(COMMAND, ['--sael', '3'])).toThrow(new UsageError("Unknown option '--sael'"));
    expect(() => readCommandLine(COMMAND, ['--sale'])).toThrow(new UsageError("Option '--sale <value>' argument missing"));
    expect(() => readCommandLine({ usage: 'usage: npm run bare' }, ['now'])).toThrow(UsageError);
    expect(() => readCommandLine(COMMAND, ['--keep=yes'])).toThrow(UsageError);
  });
});
