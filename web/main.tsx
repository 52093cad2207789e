/**
 * The Pithos web console (docs/console.md): Preact components bundled by esbuild
 * (web/build.mjs), served by Pithos at /console. The hash picks the view:
 * #/<section>[/<name>]. The token is kept in sessionStorage only.
 */
import { type JSX, render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Pithos } from '../client/index.js';
import { ConfirmHost } from './components/Confirm.js';
import { TOKEN_KEY, makeClient, onUnauthorized } from './lib/api.js';
import { useHash } from './lib/hooks.js';
import { SECTIONS as KIND_SECTIONS } from './lib/kinds.js';
import { Dashboard } from './views/Dashboard.js';
import { Feed } from './views/Feed.js';
import { ListView } from './views/List.js';
import { LockView } from './views/Lock.js';
import { Names, type Section } from './views/Names.js';
import { RecordView } from './views/Record.js';
import { SetView } from './views/Set.js';
import { SignIn } from './views/SignIn.js';
import { TableView } from './views/Table.js';
import { Txn } from './views/Txn.js';
import { VariantView } from './views/Variant.js';
import { ZsetView } from './views/Zset.js';

// One section per kind (lib/kinds.ts), between the dashboard and the two views over all kinds.
const NAV: { path: string; title: string; key: string }[] = [
  { path: '', title: 'Dashboard', key: '1' },
  ...Object.entries(KIND_SECTIONS).map(([path, s], i) => ({ path, title: s.title, key: String(i + 2) })),
  { path: 'feed', title: 'Change feed', key: '9' },
  { path: 'txn', title: 'Transactions', key: '0' },
];

/** The view of one object of each kind. */
const OBJECT_VIEWS: Record<Section, (db: Pithos, name: string) => JSX.Element> = {
  tables: (db, name) => <TableView db={db} name={name} />,
  records: (db, name) => <RecordView db={db} id={name} />,
  variants: (db, name) => <VariantView db={db} name={name} />,
  locks: (db, name) => <LockView db={db} name={name} />,
  lists: (db, name) => <ListView db={db} name={name} />,
  sets: (db, name) => <SetView db={db} name={name} />,
  zsets: (db, name) => <ZsetView db={db} name={name} />,
};

const isSection = (s: string): s is Section => Object.hasOwn(KIND_SECTIONS, s);

function parse(hash: string): { section: string; name: string | undefined } {
  const parts = hash.replace(/^#\/?/, '').split('/');
  let name: string | undefined;
  try {
    name = parts.length > 1 && parts[1] !== '' ? decodeURIComponent(parts.slice(1).join('/')) : undefined;
  } catch {
    name = undefined;
  }
  return { section: parts[0] ?? '', name };
}

function View({ db, section, name }: { db: Pithos; section: string; name: string | undefined }) {
  if (isSection(section)) return name !== undefined ? OBJECT_VIEWS[section](db, name) : <Names db={db} section={section} />;
  switch (section) {
    case 'feed':
      return <Feed db={db} />;
    case 'txn':
      return <Txn db={db} />;
    default:
      return <Dashboard db={db} />;
  }
}

function App() {
  const [db, setDb] = useState<Pithos | null>(() => {
    const t = sessionStorage.getItem(TOKEN_KEY);
    return t ? makeClient(t) : null;
  });
  const [notice, setNotice] = useState('');
  const hash = useHash();
  const { section, name } = parse(hash);
  const current = (NAV.find((s) => s.path === section) ?? NAV[0]!).title;
  const first = useRef(true);
  // On a phone the sections are a menu that this button opens (style.css); wider, they are all in the bar.
  const [menu, setMenu] = useState(false);

  const signOut = (why = ''): void => {
    sessionStorage.removeItem(TOKEN_KEY);
    setDb(null);
    setNotice(why);
  };
  onUnauthorized((why) => signOut(why));

  // After a navigation, focus goes to the new view's heading (not the whole page), so
  // screen readers announce it and Tab continues from there.
  useEffect(() => {
    setMenu(false);
    if (first.current) {
      first.current = false;
      return;
    }
    const h1 = document.querySelector<HTMLElement>('main h1');
    if (h1) {
      h1.tabIndex = -1;
      h1.focus({ preventScroll: false });
    }
  }, [hash]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      const t = e.target as HTMLElement;
      if (e.key === 'Escape' && document.getElementById('nav')?.classList.contains('open')) {
        setMenu(false);
        document.getElementById('nav-toggle')?.focus();
        return;
      }
      if (!db || e.ctrlKey || e.metaKey || e.altKey || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) || document.querySelector('dialog[open]')) return;
      const s = NAV.find((x) => x.key === e.key);
      if (s) {
        e.preventDefault();
        location.hash = `#/${s.path}`;
      } else if (e.key === '/') {
        const f = document.querySelector<HTMLElement>('main input, main textarea');
        if (f) {
          e.preventDefault();
          f.focus();
        }
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [db]);

  if (!db) {
    return (
      <>
        <header class="top">
          <span class="brand">Pithos</span>
        </header>
        <main id="main">
          <SignIn
            notice={notice}
            onSignedIn={(token, client) => {
              sessionStorage.setItem(TOKEN_KEY, token);
              setNotice('');
              setDb(client);
            }}
          />
        </main>
      </>
    );
  }
  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.querySelector<HTMLElement>('main h1')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Pithos</span>
        <button type="button" id="nav-toggle" aria-expanded={menu} aria-controls="nav" onClick={() => setMenu(!menu)}>
          <span class="sr-only">Sections; now </span>
          {current}
          <span aria-hidden="true"> {menu ? '▴' : '▾'}</span>
        </button>
        <nav id="nav" aria-label="Sections" class={menu ? 'open' : undefined}>
          <ul>
            {NAV.map((s) => (
              <li key={s.path}>
                <a href={`#/${s.path}`} data-key={s.key} onClick={() => setMenu(false)} aria-current={s.path === section ? 'page' : undefined}>
                  {s.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" id="signout" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main id="main">
        <View key={`${section}/${name ?? ''}`} db={db} section={section} name={name} />
      </main>
      <ConfirmHost />
    </>
  );
}

render(<App />, document.getElementById('app')!);
