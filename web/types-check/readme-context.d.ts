// What the README's JS snippet ("Use it in your game") takes from the game around it: the
// player's position, which it sends every frame.
declare let x: number;
declare let y: number;
