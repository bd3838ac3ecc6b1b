import { Argument, type Command } from 'commander';
import type { CliIo } from '../io.ts';

/** What the shell may offer after one command path: its subcommands (with aliases) and options. */
interface Node {
  readonly path: string;
  readonly words: readonly string[];
  /** Options that take a value, by flag: their choices (`-o`), or none to offer (a file name, a CIDR). */
  readonly valued: ReadonlyMap<string, readonly string[]>;
}

/** Every command path of the tree, e.g. `ipam`, `ipam get`, `ipam get pools`, with the words valid after it. */
export function completionTree(root: Command): { nodes: Node[]; transitions: [string, string, string][] } {
  const nodes: Node[] = [];
  const transitions: [string, string, string][] = [];
  const globals = root.options;
  const visit = (cmd: Command, path: string) => {
    const options = [...cmd.options, ...(cmd === root ? [] : globals)].filter((o) => !o.hidden);
    const valued = new Map<string, readonly string[]>();
    for (const o of options)
      if (o.required || o.optional)
        for (const flag of [o.short, o.long]) if (flag) valued.set(flag, o.argChoices ?? []);
    const subcommands = cmd.commands.filter((c) => c.name() !== 'help');
    nodes.push({
      path,
      words: [
        ...subcommands.flatMap((c) => [c.name(), ...c.aliases()]),
        ...options.flatMap((o) => [o.long ?? o.short ?? '']),
        '--help',
      ],
      valued,
    });
    for (const sub of subcommands) {
      const subPath = `${path} ${sub.name()}`;
      for (const word of [sub.name(), ...sub.aliases()]) transitions.push([path, word, subPath]);
      visit(sub, subPath);
    }
  };
  visit(root, root.name());
  return { nodes, transitions };
}

/**
 * A bash completion script generated from the command tree, so it cannot fall behind the commands. It walks the
 * words typed so far through the tree's transitions, then offers the subcommands and options of where it stands,
 * or an option's choices (`-o <TAB>` offers wide, json, yaml, name).
 */
export function bashCompletion(root: Command): string {
  const { nodes, transitions } = completionTree(root);
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const lines = [
    `# ${root.name()} completion for bash. Load it with: source <(${root.name()} completion bash)`,
    `_${root.name()}_complete() {`,
    '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" path=' +
      q(root.name()) +
      ' i w words=""',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    w="${COMP_WORDS[i]}"',
    '    case "$path|$w" in',
    ...transitions.map(([from, word, to]) => `      ${q(`${from}|${word}`)}) path=${q(to)} ;;`),
    '    esac',
    '  done',
    '  case "$path" in',
    ...nodes.flatMap((n) => [
      `    ${q(n.path)})`,
      ...(n.valued.size
        ? [
            '      case "$prev" in',
            ...[...n.valued].map(
              ([flag, choices]) =>
                `        ${q(flag)}) COMPREPLY=($(compgen -W ${q(choices.join(' '))} -- "$cur")); return ;;`,
            ),
            '      esac',
          ]
        : []),
      `      words=${q(n.words.join(' '))} ;;`,
    ]),
    '  esac',
    '  COMPREPLY=($(compgen -W "$words" -- "$cur"))',
    '}',
    `complete -F _${root.name()}_complete ${root.name()}`,
    '',
  ];
  return lines.join('\n');
}

/** zsh runs the same function through its bash compatibility layer (bashcompinit), which ships with zsh. */
export function zshCompletion(root: Command): string {
  return [
    `#compdef ${root.name()}`,
    `# ${root.name()} completion for zsh. Load it with: source <(${root.name()} completion zsh)`,
    'autoload -U +X compinit && compinit',
    'autoload -U +X bashcompinit && bashcompinit',
    bashCompletion(root),
  ].join('\n');
}

/** `ipam completion bash|zsh`. */
export function addCompletionCommand(program: Command, io: CliIo): void {
  program
    .command('completion')
    .addArgument(new Argument('<shell>').choices(['bash', 'zsh']))
    .description('Print a shell completion script')
    .addHelpText(
      'after',
      '\nExamples:\n  source <(ipam completion bash)        # in ~/.bashrc\n  source <(ipam completion zsh)         # in ~/.zshrc',
    )
    .action((shell: 'bash' | 'zsh') => {
      io.stdout(shell === 'bash' ? bashCompletion(program) : zshCompletion(program));
    });
}
