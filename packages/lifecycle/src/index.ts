export { settleReturns, emptyTally, type ReturnDeps, type ReturnTally } from './stock-returner.ts';
export { runExpiryPass, type ExpiryPassResult } from './expiry-pass.ts';
