// Facet console, clients (/ui/clients): one page of /clients (at most
// 256 KiB of JSON, ?after= for the next) every second while visible; each
// client's resources with the object and variant that served them. On
// `facet relay` (which answers /upstreams), its upstreams with the cache's
// hits and misses per resource.
'use strict';

(() => {
  const {el, fill, clock, poll, badge} = Facet;
  const kPageBytes = 256 << 10;

  const params = new URLSearchParams(location.search);
  const nodeInput = document.getElementById('node');
  const onlyProblems = document.getElementById('only-problems');
  nodeInput.value = params.get('node') || '';
  let after = Number(params.get('after') || 0);
  const previousPages = [];    // The `after` of each page before this one.
  let answer = null;
  const open = new Set();      // stream ids whose details the user opened.
  const closed = new Set();    // ... and closed (problem clients open by default).

  function url() {
    const query = new URLSearchParams({max_bytes: kPageBytes});
    if (after) query.set('after', after);
    if (nodeInput.value.trim()) query.set('node', nodeInput.value.trim());
    return `../clients?${query}`;
  }

  function statusBadge(resource) {
    switch (resource.status) {
      case 'ACKED': return badge('accepted', 'ACKed');
      case 'NACKED': return badge('nacked', 'NACKed');
      case 'REQUESTED': return badge('stale', resource.version ? 'sent, not ACKed' : 'requested');
      case 'DOES_NOT_EXIST': return badge('rejected', 'does not exist');
      default: return badge('stale', resource.status || '?');
    }
  }

  function problems(client) {
    let nacked = 0, stale = 0, acked = 0;
    for (const r of client.resources || []) {
      if (r.status === 'NACKED') nacked++;
      else if (r.stale_since) stale++;
      else if (r.status === 'ACKED') acked++;
    }
    return {nacked, stale, acked};
  }

  function resourceRow(r) {
    return el('tr', {'data-name': r.name, 'data-status': r.status},
              el('td', {}, r.type),
              el('th', {scope: 'row', class: 'mono'}, r.name),
              el('td', {class: 'mono'}, r.object || '—'),
              el('td', {}, r.variant ? el('span', {class: 'mono'}, r.variant) : '—',
                 r.constraints ? el('div', {class: 'hint'}, r.constraints) : null),
              el('td', {class: 'mono', title: r.version || ''}, (r.version || '').slice(0, 12) || '—'),
              el('td', {}, statusBadge(r),
                 r.stale_since ? el('div', {class: 'hint'}, `stale since ${clock(new Date(r.stale_since))}`) : null,
                 r.status === 'NACKED'
                     ? el('div', {class: 'reason'}, `rejected version ${(r.nacked_version || '').slice(0, 12)}: ${r.error_detail || ''}`)
                     : null));
  }

  // The peer's identity from its verified certificate (mTLS), as CSDS sees it.
  function identityText(client) {
    const identity = client.identity;
    if (!identity) return 'no client certificate';
    const names = [identity.spiffe_id, ...(identity.dns_names || []).map((n) => `dns:${n}`)]
        .filter(Boolean);
    return names.length ? names.join(', ') : 'certificate without SPIFFE ID or DNS name';
  }

  // A page of a few clients shows them all open.
  function clientCard(client, few) {
    const p = problems(client);
    const id = String(client.stream_id);
    const hasProblems = p.nacked > 0 || p.stale > 0;
    const details = el('details', {class: 'client', 'data-node': client.node_id, 'data-stream': id,
                                   open: open.has(id) || ((hasProblems || few) && !closed.has(id))});
    const parameters = Object.entries(client.parameters || {}).map(([k, v]) => `${k}=${v}`).join(', ');
    // fill() leaves out the missing parts (append() would print "null").
    fill(details,
        el('summary', {},
           el('strong', {class: 'mono'}, client.node_id || '(no node id yet)'), ' ',
           el('span', {class: 'hint'}, `${client.peer} · ${client.protocol} · stream ${id}`), ' ',
           el('span', {class: client.identity ? 'identity mono' : 'identity hint'}, identityText(client)), ' ',
           el('span', {class: 'mono'}, `{${parameters}}`), ' ',
           badge('accepted', `${p.acked} ACKed`),
           p.nacked ? [' ', badge('nacked', `${p.nacked} NACKed`)] : null,
           p.stale ? [' ', badge('stale', `${p.stale} stale`)] : null),
        el('table', {class: 'grid'},
           el('thead', {}, el('tr', {}, ['Type', 'Name', 'Object', 'Variant', 'Version', 'Status']
                                            .map((h) => el('th', {scope: 'col'}, h)))),
           el('tbody', {}, (client.resources || []).map(resourceRow))),
        client.omitted_resources
            ? el('p', {class: 'hint'}, `${client.omitted_resources} more resources did not fit; filter by this node id.`)
            : null);
    details.addEventListener('toggle', () => {
      if (details.open) { open.add(id); closed.delete(id); } else { open.delete(id); closed.add(id); }
    });
    return details;
  }

  function render() {
    if (answer === null) return;
    const clients = (answer.clients || []).filter((c) => {
      if (!onlyProblems.checked) return true;
      const p = problems(c);
      return p.nacked > 0 || p.stale > 0;
    });
    fill(document.getElementById('clients'),
         clients.length ? clients.map((c) => clientCard(c, clients.length <= 10))
                        : [el('p', {class: 'hint'}, 'No client on this page.')]);
    const shown = (answer.clients || []).length;
    const rest = answer.omitted_clients || 0;
    document.getElementById('page-info').textContent =
        `${shown} client${shown === 1 ? '' : 's'} on this page` +
        (rest ? `, ${rest} more on the next pages` : '') + (answer.truncated ? ' (cut at the page bound)' : '');
    document.getElementById('next').disabled = answer.next_after === undefined;
    document.getElementById('prev').disabled = previousPages.length === 0;
    document.getElementById('first').disabled = after === 0;
  }

  function go(newAfter) {
    after = newAfter;
    const query = new URLSearchParams();
    if (after) query.set('after', after);
    if (nodeInput.value.trim()) query.set('node', nodeInput.value.trim());
    history.replaceState(null, '', query.toString() ? `?${query}` : location.pathname);
    refresh();
  }

  document.getElementById('next').addEventListener('click', () => {
    if (answer && answer.next_after !== undefined) {
      previousPages.push(after);
      go(answer.next_after);
    }
  });
  document.getElementById('prev').addEventListener('click', () => go(previousPages.pop() || 0));
  document.getElementById('first').addEventListener('click', () => {
    previousPages.length = 0;
    go(0);
  });
  document.getElementById('query').addEventListener('submit', (event) => {
    event.preventDefault();
    previousPages.length = 0;
    go(0);
  });
  onlyProblems.addEventListener('change', render);

  const refresh = poll(url, (json) => {
    answer = json;
    render();
  });

  function renderUpstreams(json) {
    const section = document.getElementById('upstreams-section');
    section.hidden = false;
    const upstreams = json.upstreams || [];
    const shown = json.resources_shown || 0;
    const total = json.resources_total || 0;
    fill(document.getElementById('upstreams'),
         upstreams.map((u) => el('div', {class: 'upstream', 'data-upstream': u.server_uri},
            el('h3', {class: 'mono'}, u.server_uri, ' ',
               u.connected ? badge('accepted', 'connected') : badge('rejected', 'not connected')),
            el('table', {class: 'grid'},
               el('thead', {}, el('tr', {}, ['Type', 'Name', 'Hits', 'Misses', 'Cached variants']
                                                .map((h) => el('th', {scope: 'col'}, h)))),
               el('tbody', {}, (u.resources || []).map((r) =>
                   el('tr', {'data-name': r.name},
                      el('td', {}, r.type),
                      el('th', {scope: 'row', class: 'mono'}, r.name),
                      el('td', {}, String(r.hits ?? 0)),
                      el('td', {}, String(r.misses ?? 0)),
                      el('td', {}, String(r.cached_variants ?? 0)))))))),
         total > shown ? el('p', {class: 'hint'}, `${total - shown} more cached resources not shown.`) : null);
  }

  // Only facet relay answers /upstreams; elsewhere (404) it is not asked again.
  fetch('../upstreams', {cache: 'no-store', headers: {Accept: 'application/json'}})
      .then((response) => {
        if (!response.ok) return;
        poll('../upstreams', renderUpstreams);
      })
      .catch(() => {});
})();
