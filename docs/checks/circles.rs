//! Circles in a graph of imports: every knot of nodes that reach each
//! other (a strongly connected component), told as one circle through it,
//! step by step.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One circle through every knot of `edges`, each as the edges that make
/// it, in order; `ends` gives an edge's importing and imported node. A
/// knot's circle starts at its first node (in name order) and is the
/// shortest one back to it; knots come in the order of their first nodes.
/// Of several edges between the same two nodes, the first is told.
pub fn circles<'a, E>(edges: &'a [E], ends: impl Fn(&E) -> (&str, &str)) -> Vec<Vec<&'a E>> {
    let mut graph: BTreeMap<&str, BTreeMap<&str, &'a E>> = BTreeMap::new();
    for edge in edges {
        let (from, to) = ends(edge);
        graph.entry(to).or_default();
        graph.entry(from).or_default().entry(to).or_insert(edge);
    }
    let mut found = Vec::new();
    for knot in knots(&graph) {
        let start = *knot.first().expect("a knot has a node");
        let inside: BTreeSet<&str> = knot.iter().copied().collect();
        // Shortest way from `start` back to it, within the knot.
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        let mut last = None;
        'search: while let Some(node) = queue.pop_front() {
            for &next in graph[node].keys() {
                if next == start {
                    last = Some(node);
                    break 'search;
                }
                if inside.contains(next) && !came_from.contains_key(next) {
                    came_from.insert(next, node);
                    queue.push_back(next);
                }
            }
        }
        let Some(mut node) = last else {
            // A lone node without an edge to itself is no circle.
            continue;
        };
        let mut steps = vec![graph[node][start]];
        while node != start {
            let previous = came_from[node];
            steps.push(graph[previous][node]);
            node = previous;
        }
        steps.reverse();
        found.push(steps);
    }
    found
}

/// The strongly connected components of `graph` (Tarjan's algorithm), each
/// sorted, in the order of their first nodes.
fn knots<'a, E>(graph: &BTreeMap<&'a str, BTreeMap<&'a str, E>>) -> Vec<Vec<&'a str>> {
    struct Walk<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        knots: Vec<Vec<&'a str>>,
    }
    fn visit<'a, E>(
        node: &'a str,
        graph: &BTreeMap<&'a str, BTreeMap<&'a str, E>>,
        walk: &mut Walk<'a>,
    ) {
        let number = walk.index.len();
        walk.index.insert(node, number);
        walk.low.insert(node, number);
        walk.stack.push(node);
        walk.on_stack.insert(node);
        for &next in graph[node].keys() {
            if !walk.index.contains_key(next) {
                visit(next, graph, walk);
                let low = walk.low[node].min(walk.low[next]);
                walk.low.insert(node, low);
            } else if walk.on_stack.contains(next) {
                let low = walk.low[node].min(walk.index[next]);
                walk.low.insert(node, low);
            }
        }
        if walk.low[node] == walk.index[node] {
            let mut knot = Vec::new();
            while let Some(member) = walk.stack.pop() {
                walk.on_stack.remove(member);
                knot.push(member);
                if member == node {
                    break;
                }
            }
            knot.sort_unstable();
            walk.knots.push(knot);
        }
    }
    let mut walk = Walk {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        knots: Vec::new(),
    };
    for &node in graph.keys() {
        if !walk.index.contains_key(node) {
            visit(node, graph, &mut walk);
        }
    }
    let mut knots = walk.knots;
    knots.sort();
    knots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn told(edges: &[(&'static str, &'static str)]) -> Vec<Vec<String>> {
        circles(edges, |&(from, to)| (from, to))
            .into_iter()
            .map(|circle| {
                circle
                    .into_iter()
                    .map(|(from, to)| format!("{from}→{to}"))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_line_of_imports_is_no_circle() {
        assert!(told(&[("a", "b"), ("b", "c"), ("a", "c")]).is_empty());
    }

    #[test]
    fn each_knot_is_told_once_by_its_shortest_circle() {
        let edges = [
            ("a", "b"),
            ("b", "c"),
            ("c", "a"),
            ("b", "a"),
            ("x", "y"),
            ("y", "x"),
            ("y", "z"),
        ];
        assert_eq!(told(&edges), [vec!["a→b", "b→a"], vec!["x→y", "y→x"]]);
    }

    #[test]
    fn a_longer_circle_is_told_step_by_step_in_order() {
        let edges = [
            ("service", "poller"),
            ("poller", "tools"),
            ("tools", "service"),
        ];
        assert_eq!(
            told(&edges),
            [vec!["poller→tools", "tools→service", "service→poller"]]
        );
    }

    #[test]
    fn a_node_importing_itself_is_a_circle() {
        assert_eq!(told(&[("a", "a")]), [vec!["a→a"]]);
    }
}
