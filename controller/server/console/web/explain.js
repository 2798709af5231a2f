// Facet console, explain (/ui/explain?target=NAME&param=K=V...): the
// /explain graph for a target and parameters, drawn as SVG in columns
// (listener → route → clusters → endpoints), polled every second while shown.
// The graph is a tree layered by depth, so a tidy-tree layout is enough: each
// leaf gets a row, a parent sits at the middle of its children. A column whose
// edges come from route rules gets a wider gap for their labels ("routes[0]
// prefix / · 90%"), so the examples' greeter fits 1280 px without scrolling;
// labels are shortened, with the whole text in their title and the table.
'use strict';

(() => {
  const {el, fill, poll, badge} = Facet;
  const kSvg = 'http://www.w3.org/2000/svg';
  const kBoxWidth = 210, kBoxHeight = 72, kColumnGap = 80, kRuleColumnGap = 180, kRowGap = 14;
  const kMaxNodes = 400;
  // Edges fan out from a bar this far right of the parent; labels start after it.
  const kBar = 12;
  // Characters per pixel of the 10px monospace edge labels, rounded up.
  const kLabelCharWidth = 6.1;

  const page = new URLSearchParams(location.search);
  const targetInput = document.getElementById('target');
  const paramsInput = document.getElementById('params');
  const authorityInput = document.getElementById('authority');
  targetInput.value = page.get('target') || '';
  paramsInput.value = page.getAll('param').join(' ');
  authorityInput.value = page.get('authority') || '';

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(kSvg, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  }

  function query() {
    const q = new URLSearchParams();
    q.set('target', targetInput.value.trim());
    for (const param of paramsInput.value.split(/[\s,]+/).filter(Boolean)) q.append('param', param);
    if (authorityInput.value.trim()) q.set('authority', authorityInput.value.trim());
    return q;
  }

  function outcome(node) {
    if (node.problem) return 'rejected';
    if (node.serving_previous) return 'previous';
    if (node.status === 'selected' || node.status === 'shown_above') return 'accepted';
    return 'stale';
  }

  function statusWord(node) {
    switch (node.status) {
      case 'selected': return node.serving_previous ? 'previous revision' : 'selected';
      case 'does_not_exist': return 'does not exist';
      case 'no_variant': return 'no variant matches';
      case 'not_cached': return 'not cached (relay)';
      case 'invalid_name': return 'invalid name';
      case 'shown_above': return 'shown above';
      default: return node.status;
    }
  }

  // Flattens the tree with depth and row; returns the nodes in graph order.
  function layout(root) {
    const nodes = [];
    let nextRow = 0;
    function visit(node, depth, parent) {
      if (nodes.length >= kMaxNodes) return null;
      const entry = {node, depth, parent, row: 0};
      nodes.push(entry);
      const children = (node.children || []).map((c) => visit(c, depth + 1, entry)).filter(Boolean);
      entry.row = children.length ? (children[0].row + children[children.length - 1].row) / 2 : nextRow++;
      return entry;
    }
    visit(root, 0, null);
    return nodes;
  }

  function clip(text, n) {
    return text.length > n ? `${text.slice(0, n - 1)}…` : text;
  }

  // "90%" for 90 of 100; at most one decimal ("66.7%").
  function percent(rule) {
    return `${Number((100 * rule.weight / rule.total_weight).toFixed(1))}%`;
  }

  // The route rule of an edge in full, as `facet explain` prints it.
  function ruleText(rule) {
    return `from route ${rule.name ? `"${rule.name}" ` : ''}(${rule.field}) of virtual host ` +
        `"${rule.virtual_host}": ${rule.match}` +
        (rule.total_weight ? `, weight ${rule.weight} of ${rule.total_weight} (${percent(rule)})` : '');
  }

  // The edge label of a route rule in at most `chars` characters: the route,
  // its match without quotes, and the weight share, which is never cut.
  function ruleLabel(rule, chars) {
    const share = rule.total_weight ? ` · ${percent(rule)}` : '';
    return clip(`routes[${rule.index}] ${rule.match.replace(/"/g, '')}`, chars - share.length) + share;
  }

  // The box's last line: the chosen virtual host of a route configuration,
  // else the first thing the client does with the resource.
  function boxDetail(node) {
    if (node.virtual_host) return `virtual host ${node.virtual_host}`;
    if (node.type === 'route' && node.status === 'selected' && !node.problem) return 'every virtual host';
    return (node.details || [])[0] || '';
  }

  function drawGraph(root) {
    const nodes = layout(root);
    const rows = Math.max(1, ...nodes.map((n) => n.row + 1));
    const depth = Math.max(0, ...nodes.map((n) => n.depth));
    // gaps[d]: between columns d and d + 1; left[d]: column d's x.
    const gaps = Array.from({length: depth}, (_, d) =>
        nodes.some((n) => n.depth === d + 1 && n.node.route_rule) ? kRuleColumnGap : kColumnGap);
    const left = [10];
    for (let d = 0; d < depth; ++d) left.push(left[d] + kBoxWidth + gaps[d]);
    const x = (n) => left[n.depth];
    const y = (n) => 10 + n.row * (kBoxHeight + kRowGap);
    const width = left[depth] + kBoxWidth + 10;
    const height = 20 + rows * (kBoxHeight + kRowGap);
    const picture = svg('svg', {viewBox: `0 0 ${width} ${height}`, width, height, class: 'explain-graph'});
    picture.append(svg('title', {}, `Graph of ${root.name}`));
    for (const n of nodes) {
      if (!n.parent) continue;
      const x1 = x(n.parent) + kBoxWidth, y1 = y(n.parent) + kBoxHeight / 2;
      const x2 = x(n), y2 = y(n) + kBoxHeight / 2, bar = x1 + kBar;
      const broken = outcome(n.node) === 'rejected';
      const rule = n.node.route_rule;
      picture.append(svg('path', {d: `M${x1},${y1} H${bar} V${y2} H${x2}`,
                                  class: `edge${broken ? ' broken' : ''}`}));
      // On the edge's last segment: the route rule and weight share of a
      // cluster reference, else the referencing field's last part
      // ("route_config_name", "name"); a broken edge's problem first. The
      // whole field, rule and problem in its title.
      const chars = Math.floor((x2 - bar - 8) / kLabelCharWidth);
      const field = (n.node.field || '').split(' ')[0].split('.').pop();
      const label = broken ? clip(n.node.problem, chars) : rule ? ruleLabel(rule, chars) : clip(field, chars);
      if (label) {
        const title = [n.node.field, rule && ruleText(rule), n.node.problem].filter(Boolean).join('\n');
        picture.append(svg('text', {x: bar + 4, y: y2 - 4, class: `edge-label${broken ? ' broken' : ''}${rule ? ' rule' : ''}`,
                                    'data-to': n.node.name},
                           svg('title', {}, title), label));
      }
    }
    for (const n of nodes) {
      const node = n.node;
      const kind = outcome(node);
      const variant = node.variant ? `${node.variant}${node.constraints ? ` [${node.constraints}]` : ''}` : statusWord(node);
      const box = svg('g', {class: `box ${kind}`, transform: `translate(${x(n)},${y(n)})`,
                            'data-type': node.type, 'data-name': node.name, 'data-status': node.status});
      box.append(svg('title', {}, [`${node.type} ${node.name}`, node.object && `object ${node.object}`,
                                   node.variant && `variant ${node.variant}`,
                                   node.virtual_host && `virtual host ${node.virtual_host}`, node.problem,
                                   ...(node.details || [])].filter(Boolean).join('\n')),
                 svg('rect', {width: kBoxWidth, height: kBoxHeight, rx: 6}),
                 svg('text', {x: 8, y: 17, class: 'box-type'}, `${node.type} · ${statusWord(node)}`),
                 svg('text', {x: 8, y: 34, class: 'box-name'}, clip(node.name, 27)),
                 svg('text', {x: 8, y: 50, class: 'box-object'},
                     clip(node.object ? `${node.object} · ${variant}` : variant, 30)),
                 svg('text', {x: 8, y: 65, class: 'box-detail'}, clip(boxDetail(node), 32)));
      picture.append(box);
    }
    fill(document.getElementById('graph'), picture);
    return nodes;
  }

  function render(result) {
    const params = Object.entries(result.parameters || {}).map(([k, v]) => `${k}=${v}`).join(', ');
    const verdict = document.getElementById('verdict');
    verdict.textContent = `${result.listener_name} for {${params}}: ` +
        (result.complete ? 'complete' : 'broken') + (result.partial ? ' (from a relay\'s cache)' : '');
    verdict.className = result.complete ? 'verdict accepted-text' : 'verdict rejected-text';
    fill(document.getElementById('problems'), (result.problems || []).map((p) => el('li', {}, badge('rejected', 'broken'), ' ', p)));
    const nodes = drawGraph(result.graph);
    fill(document.querySelector('#nodes tbody'), nodes.map(({node, depth}) =>
        el('tr', {'data-name': node.name},
           el('td', {}, '\u00a0'.repeat(depth * 2), node.type),
           el('th', {scope: 'row', class: 'mono'}, node.name, node.field ? el('div', {class: 'hint'}, node.field) : null,
              node.route_rule ? el('div', {class: 'hint rule'}, ruleText(node.route_rule)) : null),
           el('td', {class: 'mono'}, node.object || '—'),
           el('td', {}, node.variant ? el('span', {class: 'mono'}, node.variant) : '—',
              node.constraints ? el('div', {class: 'hint'}, node.constraints) : null),
           el('td', {}, badge(outcome(node), statusWord(node)),
              node.serving_previous ? el('div', {class: 'reason'}, `latest rejected: ${node.serving_previous}`) : null,
              node.problem ? el('div', {class: 'reason'}, node.problem) : null),
           el('td', {}, el('ul', {class: 'reason'}, (node.details || []).map((d) => el('li', {}, d)))))));
  }

  document.getElementById('query').addEventListener('submit', (event) => {
    event.preventDefault();
    history.replaceState(null, '', `?${query()}`);
    if (refresh) refresh(); else start();
  });

  let refresh = null;
  function start() {
    refresh = poll(() => `../explain?${query()}`, render, {
      onError: (message) => {
        document.getElementById('verdict').textContent = message;
      },
    });
  }
  if (targetInput.value) start();
})();
