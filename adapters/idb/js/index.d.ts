// Types of the npm package alkstore-idb: named locks shared by every tab, window and
// dedicated worker of an origin, with ttl leases and fencing tokens, shaped like
// navigator.locks.

/** Loads the wasm module once per context (AlkLocks.open calls it). */
export function init(wasm?: string | URL | Request | Response | BufferSource | WebAssembly.Module): Promise<unknown>;

/** This context's id: the default owner (clientId) of every lease it takes. */
export const contextId: string;

/** Names of the errors of the lock engine, to switch on. */
export type LockErrorName =
  | 'InvalidNameError'
  | 'ReservedNameError'
  | 'InvalidOwnerError'
  | 'InvalidTtlError'
  | 'ExpiredError'
  | 'CapacityError'
  | 'UnavailableError'
  | 'LockError';

/** An error of the lock engine; `name` says which. */
export class LockError extends Error {
  /** What the package itself does for the engine's errors (details: the fields below). */
  constructor(name: LockErrorName, message: string, details?: { token?: number; deadline?: number; ttl?: number; tooShortToKeepAlive?: boolean });
  name: LockErrorName;
  /** ExpiredError: the lost lease's token. */
  token?: number;
  /** ExpiredError: the lost lease's deadline (epoch ms). */
  deadline?: number;
  /** InvalidTtlError: the refused ttl (ms). */
  ttl?: number;
  /** InvalidTtlError: the ttl is below twice the io timeout, too short to keep alive. */
  tooShortToKeepAlive?: boolean;
}

export interface OpenOptions {
  /** The longest one operation may wait behind other contexts (ms). Default 1000. */
  ioTimeout?: number;
  /** How often a waiter shows it is alive (ms). Default 1000. */
  heartbeat?: number;
  /** The longest lock name, in bytes of UTF-8 once escaped. Default 1024. */
  maxNameLength?: number;
  /** The default owner of this object's leases (not empty, at most 256 bytes of UTF-8, no lone surrogates: else InvalidOwnerError). Default: `contextId`. */
  owner?: string;
  /** Where to load the .wasm from (see `init`). Default: beside the module. */
  wasm?: string | URL | Request | Response | BufferSource | WebAssembly.Module;
}

/** Web Locks' LockOptions, exclusive mode, plus `ttl` and `keepAlive`. */
export interface RequestOptions {
  /** Only "exclusive"; "shared" is refused with NotSupportedError. */
  mode?: 'exclusive' | 'shared';
  /** Call back with null instead of waiting when the name is busy. */
  ifAvailable?: boolean;
  /**
   * Take the lock from its holder (its promise rejects with AbortError, its lock.signal
   * aborts), ahead of the queue, in one transaction.
   */
  steal?: boolean;
  /** Withdraws a waiting request, rejecting with the signal's reason. */
  signal?: AbortSignal;
  /** The lease's ttl (ms). Default 30000. */
  ttl?: number;
  /** Renew the lease while the callback runs. Default true (needs ttl >= 2 x ioTimeout). */
  keepAlive?: boolean;
}

/** The lock a request callback gets: Web Locks' Lock plus the lease. */
export class Lock {
  private constructor();
  readonly name: string;
  readonly mode: 'exclusive';
  /** The fencing token: larger than every token granted before on this database; below 2^53. */
  readonly token: number;
  /** The owner (the AlkLocks' clientId). */
  readonly owner: string;
  /** The lease's deadline (epoch ms), pushed out by keep-alive renewals. */
  readonly deadline: number;
  /** Aborts when the lease is lost (stolen, force-released, lapsed); its reason is a LockError. */
  readonly signal: AbortSignal;
}

/** One entry of query(). */
export interface LockInfo {
  name: string;
  mode: 'exclusive';
  /** The owner: a context id unless a call named another owner. */
  clientId: string;
  owner: string;
  /** The held lease's fencing token; null for a pending request. */
  token: number | null;
  /** The held lease's deadline (epoch ms); null for a pending request. */
  deadline: number | null;
}

export interface LockManagerSnapshot {
  held: LockInfo[];
  pending: LockInfo[];
}

/** A live lease as holder() and forceRelease() report it. */
export interface LeaseInfo {
  name: string;
  owner: string;
  token: number;
  /** Epoch ms. */
  deadline: number;
}

export interface TryLockOptions {
  /** The lease's ttl (ms). Default 30000. */
  ttl?: number;
  /** Default: the AlkLocks' clientId. */
  owner?: string;
}

export interface AcquireOptions extends TryLockOptions {
  /** The longest wait (ms); then the promise resolves with null. Default: no limit. */
  wait?: number;
  /** Withdraws the request, rejecting with the signal's reason. */
  signal?: AbortSignal;
}

/** A lease held across callbacks. */
export class Lease {
  private constructor();
  readonly name: string;
  readonly owner: string;
  /**
   * The fencing token: larger than every token granted before on this database; below 2^53.
   * Clock-derived (about 1.8e15): never store it in 32 bits.
   */
  readonly token: number;
  /** The deadline (epoch ms) as of the last grant or renewal. */
  readonly deadline: number;
  /** The ttl (ms) of the last grant or renewal. */
  readonly ttl: number;
  /** Whether release() or detach() was called. */
  readonly released: boolean;
  /**
   * Aborts when the lease is lost (reason: the LockError); never once released or detached.
   * Read late, it is aborted already when the loss is known here, and its first read looks
   * at the database once.
   */
  readonly signal: AbortSignal;
  /** Resets the deadline to now + ttl (default: the current ttl); rejects with ExpiredError once lost. */
  renew(ttl?: number): Promise<void>;
  /**
   * true when the lease was live and is now free; false when it had been lost (or released
   * already). Rejects with an InvalidStateError DOMException after detach().
   */
  release(): Promise<boolean>;
  /** Gives up the handle; the lease runs to its deadline. Throws InvalidStateError once released. */
  detach(): void;
  /**
   * Renews the lease to its ttl every `every` ms (default, and for 0: a third of the ttl;
   * above half the ttl: half) until it is lost (resolves with the LockError) or released
   * (resolves with null; a keepAlive called after release rejects with InvalidStateError).
   * Rejects at once with InvalidTtlError when the ttl is below 2 x ioTimeout. Leases from
   * tryLock and acquire are renewed only while a keepAlive runs.
   */
  keepAlive(options?: { every?: number }): Promise<LockError | null>;
  /**
   * Resolves when the lease is lost (with the LockError), or with null once released (a
   * lapsed called after release rejects with InvalidStateError).
   */
  lapsed(): Promise<LockError | null>;
  /** Whether the lease is still live (one transaction). */
  isHeld(): Promise<boolean>;
}

/** Locks shared by every tab, window and dedicated worker that open the same database. */
export class AlkLocks {
  private constructor();
  /** Opens (creating on first use) the IndexedDB database `database`. */
  static open(database: string, options?: OpenOptions): Promise<AlkLocks>;
  /** The default owner of this object's leases. */
  readonly clientId: string;
  /** The IndexedDB database's name. */
  readonly database: string;
  /** The io timeout (ms). */
  readonly ioTimeout: number;
  /** navigator.locks.request, exclusive mode, with ttl and fencing. */
  request<T>(name: string, callback: (lock: Lock) => T): Promise<Awaited<T>>;
  request<T>(name: string, options: RequestOptions & { ifAvailable: true }, callback: (lock: Lock | null) => T): Promise<Awaited<T>>;
  request<T>(name: string, options: RequestOptions & { ifAvailable?: false }, callback: (lock: Lock) => T): Promise<Awaited<T>>;
  request<T>(name: string, options: RequestOptions, callback: (lock: Lock | null) => T): Promise<Awaited<T>>;
  /**
   * navigator.locks.query, with owners, tokens and deadlines: held in grant order, pending
   * in the order the requests were made (across every name and context).
   */
  query(): Promise<LockManagerSnapshot>;
  tryLock(name: string, options?: TryLockOptions): Promise<Lease | null>;
  acquire(name: string, options?: AcquireOptions): Promise<Lease | null>;
  holder(name: string): Promise<LeaseInfo | null>;
  forceRelease(name: string): Promise<LeaseInfo | null>;
}

/** The resource's side of fencing. */
export class Fence {
  /** A fence that has seen no token, or one restored from the highest token stored with the data. */
  constructor(highest?: number);
  /** true when a write with `token` may go ahead (recorded as the highest); false when stale. */
  check(token: number): boolean;
  /** The highest token accepted so far. */
  readonly highest: number | undefined;
  /** Frees the wasm memory of this fence now (the garbage collector does it otherwise); using it afterwards throws. */
  free(): void;
}
