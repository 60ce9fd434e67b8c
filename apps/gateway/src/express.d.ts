declare global {
  namespace Express {
    interface Request {
      /** The buyer, from the verified token's `sub`. */
      userId?: string;
    }
  }
}
export {};
