// Types of shapes.js for the Node runner (the root TypeScript project does not read JavaScript).
export interface Stage {
  seconds: number;
  rate: number;
}
export interface Shape {
  description: string;
  sales: number;
  stock: number;
  perUserLimit: number;
  buyers: number;
  pickBuyer: 'unique' | 'random' | 'round-robin';
  startRate: number;
  stages: Stage[];
  maxInFlight: number;
  p99Ms: number;
}
export type ScenarioName = 'flash-crowd' | 'duplicate-storm' | 'sustained';
export declare const SCENARIOS: Record<ScenarioName, Shape>;
export declare function smokeOf(shape: Shape, seconds: number): Shape;
export declare function rateAt(shape: Shape, t: number): number;
export declare function durationOf(shape: Shape): number;
export type Outcome = 'accepted' | 'sold_out' | 'duplicate' | 'paused' | 'rate_limited' | 'other_refusal' | 'error';
export declare function outcomeOf(status: number, code: string | undefined): Outcome;
export declare const OUTCOMES: readonly Outcome[];
