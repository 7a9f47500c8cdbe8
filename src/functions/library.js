// The built-in library every function sandbox starts with, and that SQL
// queries reach as convert_unit(value, from, to). Factors take each unit
// to its dimension's SI unit; temperatures are affine and handled apart.
const UNIT_FACTORS = {
  length: {
    m: 1, km: 1000, cm: 0.01, mm: 0.001, um: 1e-6, nm: 1e-9,
    mi: 1609.344, mile: 1609.344, miles: 1609.344, yd: 0.9144, ft: 0.3048,
    feet: 0.3048, in: 0.0254, inch: 0.0254, nmi: 1852, au: 1.495978707e11,
    ly: 9.4607304725808e15,
  },
  mass: {
    kg: 1, g: 0.001, mg: 1e-6, t: 1000, tonne: 1000, lb: 0.45359237,
    lbs: 0.45359237, oz: 0.028349523125,
  },
  time: {
    s: 1, sec: 1, ms: 0.001, min: 60, h: 3600, hr: 3600, hour: 3600,
    day: 86400, d: 86400, week: 604800, year: 31557600, yr: 31557600,
  },
  speed: {
    'm/s': 1, 'km/h': 1 / 3.6, kph: 1 / 3.6, kmh: 1 / 3.6, mph: 0.44704,
    knot: 0.514444, knots: 0.514444, 'ft/s': 0.3048,
  },
  area: {
    m2: 1, km2: 1e6, cm2: 1e-4, ha: 1e4, acre: 4046.8564224, ft2: 0.09290304,
    mi2: 2589988.110336,
  },
  volume: {
    m3: 1, l: 0.001, liter: 0.001, litre: 0.001, ml: 1e-6, cm3: 1e-6,
    gal: 0.003785411784, ft3: 0.028316846592, bbl: 0.158987294928,
  },
  energy: {
    j: 1, kj: 1000, mj: 1e6, cal: 4.184, kcal: 4184, wh: 3600, kwh: 3.6e6,
    mwh: 3.6e9, btu: 1055.05585262, ev: 1.602176634e-19,
  },
  power: {
    w: 1, kw: 1000, mw: 1e6, gw: 1e9, milliwatt: 0.001, hp: 745.69987158227,
    ps: 735.49875,
  },
  pressure: {
    pa: 1, kpa: 1000, mpa: 1e6, bar: 1e5, mbar: 100, atm: 101325,
    psi: 6894.757293168, mmhg: 133.322387415,
  },
  force: { n: 1, kn: 1000, lbf: 4.4482216152605 },
  torque: { 'n·m': 1, 'n*m': 1, 'n.m': 1, 'lbf·ft': 1.3558179483314, 'lb-ft': 1.3558179483314 },
  ratio: {
    ratio: 1, fraction: 1, '%': 0.01, percent: 0.01, pct: 0.01, permille: 0.001,
    ppm: 1e-6,
  },
  data: {
    b: 1, byte: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 1024,
    mib: 1048576, gib: 1073741824, tib: 1099511627776,
  },
};

const TEMPERATURES = {
  c: { toKelvin: (v) => v + 273.15, fromKelvin: (k) => k - 273.15 },
  f: { toKelvin: (v) => (v - 32) * 5 / 9 + 273.15, fromKelvin: (k) => (k - 273.15) * 9 / 5 + 32 },
  k: { toKelvin: (v) => v, fromKelvin: (k) => k },
};

// Spellings that lowercasing would confuse with another unit (Nm, newton
// metres, against nm, nanometres).
const CASED_UNITS = { Nm: 'n·m', 'N m': 'n·m', MW: 'mw', mW: 'milliwatt' };

function unitKey(unit) {
  const text = String(unit).trim();
  if (Object.prototype.hasOwnProperty.call(CASED_UNITS, text)) return CASED_UNITS[text];
  return text.trim().toLowerCase().replace(/²/g, '2').replace(/³/g, '3')
    .replace(/^°/, '').replace(/\s+/g, '');
}

function findUnit(key) {
  for (const dimension of Object.keys(UNIT_FACTORS)) {
    if (Object.prototype.hasOwnProperty.call(UNIT_FACTORS[dimension], key)) {
      return { dimension, factor: UNIT_FACTORS[dimension][key] };
    }
  }
  return null;
}

function convert_unit(value, from, to) {
  if (value === null || value === undefined) return null;
  const number = Number(value);
  if (!Number.isFinite(number)) return null;
  const source = unitKey(from);
  const target = unitKey(to);
  if (TEMPERATURES[source] && TEMPERATURES[target]) {
    return TEMPERATURES[target].fromKelvin(TEMPERATURES[source].toKelvin(number));
  }
  const a = findUnit(source);
  const b = findUnit(target);
  if (!a) throw new Error('convert_unit does not know the unit ' + from);
  if (!b) throw new Error('convert_unit does not know the unit ' + to);
  if (a.dimension !== b.dimension) {
    throw new Error('convert_unit cannot turn ' + a.dimension + ' (' + from + ') into ' +
      b.dimension + ' (' + to + ')');
  }
  return number * a.factor / b.factor;
}
