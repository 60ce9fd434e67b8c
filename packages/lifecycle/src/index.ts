export { settleReturns, emptyTally, type ReturnDeps, type ReturnTally } from './stock-returner.ts';
export { runExpiryPass, type ExpiryPassResult } from './expiry-pass.ts';
export { receivePayment, type PaymentIntakeDeps } from './payment-intake.ts';
