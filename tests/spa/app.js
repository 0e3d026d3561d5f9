// The fixture single-page app: every page is built here from JSON, client-side routing with the
// History API, a price that arrives by fetch after load, JSON-LD added by script — and, under
// /contact and /hostile/, pages that misbehave on purpose (tests/test_render.py says how each
// must end).
(() => {
  'use strict';
  const root = document.getElementById('root');

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    for (const child of children) node.append(child);
    return node;
  }

  const getJSON = (url) => fetch(url).then((r) => {
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    return r.json();
  });

  // Links are handled here (pushState) when a visitor clicks them; the crawler never clicks.
  document.addEventListener('click', (event) => {
    const link = event.target.closest('a[data-link]');
    if (!link) return;
    event.preventDefault();
    history.pushState({}, '', link.getAttribute('href'));
    route();
  });
  window.addEventListener('popstate', () => route());

  function frame(site, title, ...content) {
    document.title = title;
    const nav = el('nav', {'aria-label': 'Main'},
      ...[['/', 'Home'], ['/products/', 'Lamps'], ['/about', 'About'], ['/guides/', 'Guides'], ['/contact', 'Contact']]
        .map(([href, text]) => el('a', {href, 'data-link': ''}, text)));
    root.replaceChildren(
      el('header', {}, el('strong', {}, site.name), nav),
      el('main', {}, ...content),
      el('footer', {}, `© ${site.name} — Ghent`));
  }

  function page(site, path, ...extra) {
    const data = site.pages[path];
    const parts = [el('h1', {}, data.heading), ...data.paragraphs.map((text) => el('p', {}, text))];
    if (data.links) {
      parts.push(el('ul', {}, ...data.links.map(([href, text]) => el('li', {}, el('a', {href, 'data-link': ''}, text)))));
    }
    frame(site, data.title, ...parts, ...extra);
  }

  async function products(site) {
    const list = await getJSON('/data/products.json');
    page(site, '/products/', el('ul', {}, ...list.map((p) =>
      el('li', {}, el('a', {href: `/products/${p.slug}`, 'data-link': ''}, p.name), ` — ${p.description}`))));
  }

  async function product(site, slug) {
    const list = await getJSON('/data/products.json');
    const item = list.find((p) => p.slug === slug);
    if (!item) return notFound(site);
    const price = el('p', {id: 'price'}, 'Checking today’s price…');
    frame(site, `${item.name} — ${site.name}`,
      el('h1', {}, item.name), el('p', {}, item.description), price, el('p', {}, `Article number ${item.sku}.`));
    // The price is not in any page: it is fetched a moment after the page has loaded.
    setTimeout(async () => {
      const offer = await getJSON(`/data/prices/${slug}.json`);
      const stock = offer.availability === 'InStock' ? 'in stock' : 'out of stock';
      price.textContent = `Price: €${offer.price}, ${stock}.`;
      const ld = el('script', {type: 'application/ld+json'});
      ld.textContent = JSON.stringify({
        '@context': 'https://schema.org', '@type': 'Product', name: item.name, sku: item.sku,
        description: item.description,
        offers: {'@type': 'Offer', price: offer.price, priceCurrency: offer.currency,
                 availability: `https://schema.org/${offer.availability}`},
      });
      document.head.append(ld);
    }, 250);
  }

  function contact(site) {
    const form = el('form', {action: '/contact/send', method: 'post'},
      el('label', {for: 'name'}, 'Your name'), el('input', {id: 'name', name: 'name', required: ''}),
      el('label', {for: 'email'}, 'E-mail'), el('input', {id: 'email', name: 'email', type: 'email', required: ''}),
      el('label', {for: 'message'}, 'Message'), el('textarea', {id: 'message', name: 'message'}),
      el('button', {type: 'submit'}, 'Send'));
    page(site, '/contact', form, el('button', {'data-action': 'book-visit', type: 'button'}, 'Book a workshop visit'));
    // A script that reaches for the server's network: a private address and the cloud metadata
    // endpoint, by fetch and by iframe. The crawler's browser must refuse all of them.
    fetch('http://10.0.0.1/admin').catch(() => {});
    fetch('http://169.254.169.254/latest/meta-data/').catch(() => {});
    document.body.append(el('iframe', {src: 'http://169.254.169.254/latest/meta-data/iam/', hidden: ''}));
  }

  function notFound(site) {
    frame(site, `Not found — ${site.name}`, el('h1', {}, 'Page not found'));
  }

  const hostile = {
    '/hostile/loop': () => setTimeout(() => { for (;;) { /* never yields */ } }, 50),
    '/hostile/alerts': () => { for (let i = 0; i < 100000; i++) alert(`Subscribe to our newsletter! (${i})`); },
    '/hostile/popups': (site) => {
      page(site, '/hostile/popups');
      for (let i = 0; i < 25; i++) window.open(`/popup/${i}`, '_blank');
    },
    '/hostile/flood': () => { for (let i = 0; i < 5000; i++) fetch(`/data/flood.json?i=${i}`).catch(() => {}); },
    '/hostile/away': (site) => {
      page(site, '/hostile/away');
      setTimeout(() => { location.href = 'http://10.0.0.1/steal'; }, 50);
      setTimeout(() => { location.assign('/workshop'); }, 400);
    },
    '/hostile/crash': () => {
      const hoard = [];
      for (;;) hoard.push(new Array(1e6).fill(Math.random()));
    },
  };

  async function route() {
    const path = location.pathname;
    const site = await getJSON('/data/site.json');
    if (path === '/guides/') {
      // The guides index opens its first guide: a client-side redirect through the History API.
      history.replaceState({}, '', '/guides/getting-started');
      return route();
    }
    if (path === '/products/') return products(site);
    if (path.startsWith('/products/')) return product(site, path.slice('/products/'.length));
    if (path === '/contact') return contact(site);
    if (hostile[path]) return hostile[path](site);
    if (site.pages[path]) return page(site, path);
    return notFound(site);
  }

  route();
})();
