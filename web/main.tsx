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
  const first = useRef(true);

  const signOut = (why = ''): void => {
    sessionStorage.removeItem(TOKEN_KEY);
    setDb(null);
    setNotice(why);
  };
  onUnauthorized((why) => signOut(why));

  // After a navigation, focus goes to the new view's heading (not the whole page), so
  // screen readers announce it and Tab continues from there.
  useEffect(() => {
    // On a phone the navigation scrolls sideways: keep the current section in sight.
    document.querySelector('nav [aria-current="page"]')?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
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
    const keep = (): void => document.querySelector('nav [aria-current="page"]')?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    window.addEventListener('resize', keep);
    return () => window.removeEventListener('resize', keep);
  }, []);

  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      const t = e.target as HTMLElement;
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
        <nav id="nav" aria-label="Sections">
          <ul>
            {NAV.map((s) => (
              <li key={s.path}>
                <a href={`#/${s.path}`} data-key={s.key} aria-current={s.path === section ? 'page' : undefined}>
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
