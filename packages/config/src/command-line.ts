import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

/**
 * What a command accepts: its usage text (first line `usage: npm run <script> -- ...`, then the options
 * explained), its options in node:util parseArgs's form, and whether it takes positional arguments.
 * `--help` / `-h` is added to every command.
 */
export interface CommandSpec<O extends ParseArgsOptionsConfig> {
  usage: string;
  options?: O;
  allowPositionals?: boolean;
}

/** A command line that is not valid: the message says what is wrong; the usage follows it wherever it is shown. */
export class UsageError extends Error {
  override name = 'UsageError';
}

type Parsed<O extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ options: O & { help: { type: 'boolean'; short: 'h' } }; allowPositionals: boolean; strict: true }>
>;

/**
 * Parses `args` against the command's spec (pure): 'help' when `--help` or `-h` is among them, else the
 * values and positionals. An unknown option, an option without its value or a positional argument the
 * command does not take throws UsageError.
 */
export function readCommandLine<O extends ParseArgsOptionsConfig>(
  spec: CommandSpec<O>,
  args: readonly string[],
): 'help' | (Omit<Parsed<O>, 'values'> & { values: Omit<Parsed<O>['values'], 'help'> }) {
  const options = { ...(spec.options ?? ({} as O)), help: { type: 'boolean' as const, short: 'h' as const } };
  let parsed: Parsed<O>;
  try {
    parsed = parseArgs({ args: [...args], options, allowPositionals: spec.allowPositionals ?? false, strict: true });
  } catch (error) {
    // parseArgs's own messages name the option; its hint about `--` is for arguments no command here takes.
    throw new UsageError((error as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  if ((parsed.values as { help?: boolean }).help) return 'help';
  return parsed;
}

/** Prints `problem` and the usage to stderr and exits 2: a command line that is not valid, no stack trace. */
export function exitWithUsage(spec: Pick<CommandSpec<ParseArgsOptionsConfig>, 'usage'>, problem: string): never {
  process.stderr.write(`${problem}\n${spec.usage}\n`);
  process.exit(2);
}

/**
 * The command line of this process (`process.argv` after the script): `--help` prints the usage to
 * stdout and exits 0; a command line that is not valid prints what is wrong and the usage to stderr and
 * exits 2. Called before anything else a command does, so that `--help` works without configuration,
 * Redis or MySQL.
 */
export function parseCommandLine<O extends ParseArgsOptionsConfig>(spec: CommandSpec<O>, args: readonly string[] = process.argv.slice(2)) {
  let parsed: ReturnType<typeof readCommandLine<O>>;
  try {
    parsed = readCommandLine(spec, args);
  } catch (error) {
    if (error instanceof UsageError) exitWithUsage(spec, error.message);
    throw error;
  }
  if (parsed === 'help') {
    process.stdout.write(`${spec.usage}\n`);
    process.exit(0);
  }
  return parsed;
}
