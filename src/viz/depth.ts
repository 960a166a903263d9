/**
 * What a plan's `depth` means, in the words the view and the demo print (docs/ALGORITHM.md,
 * "Depth"): under the first rule, v1, the steps each new rollout takes; under every later rule
 * rollouts run to the episode's end and depth is the fork horizon, the steps below the node
 * within which the new branch is worth forking again.
 */
export function depthMeaning(rule: string | undefined): { badge: string; legend: string; tooltip: string } {
  if (rule === 'v1') return { badge: 'b rollouts, d steps deep', legend: 'b new rollouts start here, d steps deep', tooltip: 'steps per new rollout' };
  return {
    badge: 'b rollouts; d: fork horizon',
    legend: 'b new rollouts start here, each to the episode\u2019s end; d: fork horizon (steps below within which the new branch may fork again)',
    tooltip: 'fork horizon: steps below within which the new branch may fork again (rollouts run to the end)',
  };
}
