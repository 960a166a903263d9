import { mixedPrompts, midChoice, twoChoices, twoChoicesClean } from './choices.js';
import { DependencyEnv } from './dependency.js';
import { MazeEnv } from './maze.js';
import { NavigationEnv } from './navigation.js';
import { ToolAgentEnv } from './toolagent.js';
import type { Env } from './types.js';

export const ENVS = ['maze', 'navigation', 'dependency', 'toolagent', 'twochoice', 'midchoice', 'mixed', 'twoclean'] as const;
export type EnvName = (typeof ENVS)[number];

/** The evaluation's four environments at their standard sizes, built from one seed. */
export function createEnv(name: EnvName, seed: number): Env {
  switch (name) {
    case 'maze': return new MazeEnv({ seed });
    case 'navigation': return new NavigationEnv({ seed });
    case 'dependency': return new DependencyEnv({ seed });
    case 'toolagent': return new ToolAgentEnv({ seed });
    case 'twochoice': return twoChoices(seed);
    case 'midchoice': return midChoice(seed);
    case 'twoclean': return twoChoicesClean(seed);
    case 'mixed': return mixedPrompts(seed);
  }
}
