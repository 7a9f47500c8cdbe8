#!/usr/bin/env python3
"""A shipping database made here, with 24 questions and gold queries: a
check on a schema none of the benchmarks holds (a table that refers to
another one twice, for where a shipment leaves and where it arrives;
countries kept as codes that another table names; weights in grams;
customers deleted by a date rather than removed; a table keyed by two
columns; upper-case statuses and 'yes'/'no' flags).

Usage: scripts/shipping.py OUT_DIR

OUT_DIR gets `dev.json` and `database/shipping/shipping.sqlite` (rows drawn
with a fixed seed, so every run makes the same file); run it with
`iesr bench --dataset spider --data-dir OUT_DIR`.
"""
import random

from made_database import database, out_dir, write_questions

out = out_dir(__doc__)
random.seed(5)
db = 'shipping'
c = database(out, db)
c.executescript('''
CREATE TABLE countries (code TEXT PRIMARY KEY, name TEXT);
CREATE TABLE warehouses (warehouse_id INTEGER PRIMARY KEY, city TEXT, country_code TEXT REFERENCES countries(code), capacity_pallets INTEGER);
CREATE TABLE carriers (carrier_id INTEGER PRIMARY KEY, name TEXT, mode TEXT);
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, company TEXT, country_code TEXT REFERENCES countries(code), deleted_at TEXT);
CREATE TABLE products (sku TEXT PRIMARY KEY, description TEXT, fragile TEXT);
CREATE TABLE shipments (shipment_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(customer_id), origin_id INTEGER REFERENCES warehouses(warehouse_id), destination_id INTEGER REFERENCES warehouses(warehouse_id), carrier_id INTEGER REFERENCES carriers(carrier_id), shipped_at TEXT, delivered_at TEXT, status TEXT, weight_g INTEGER, cost_eur REAL);
CREATE TABLE shipment_items (shipment_id INTEGER REFERENCES shipments(shipment_id), line_no INTEGER, sku TEXT REFERENCES products(sku), quantity INTEGER, PRIMARY KEY (shipment_id, line_no));
''')
countries = [('DE', 'Germany'), ('FR', 'France'), ('ES', 'Spain'), ('IT', 'Italy'), ('NL', 'Netherlands'), ('PL', 'Poland')]
c.executemany('INSERT INTO countries VALUES (?,?)', countries)
warehouses = [(1, 'Hamburg', 'DE', 5200), (2, 'Berlin', 'DE', 3100), (3, 'Lyon', 'FR', 2800), (4, 'Paris', 'FR', 4400),
              (5, 'Madrid', 'ES', 3900), (6, 'Milan', 'IT', 2500), (7, 'Rotterdam', 'NL', 6100), (8, 'Warsaw', 'PL', 2200)]
c.executemany('INSERT INTO warehouses VALUES (?,?,?,?)', warehouses)
carriers = [(1, 'Nordic Freight', 'ROAD'), (2, 'SkyLift', 'AIR'), (3, 'BlueWave', 'SEA'), (4, 'EuroTruck', 'ROAD')]
c.executemany('INSERT INTO carriers VALUES (?,?,?)', carriers)
companies = ['Acme Tools', 'Baltic Foods', 'Cortez Textiles', 'Delta Pharma', 'Elbe Paper', 'Fiore Design', 'Gdansk Amber',
             'Hollandia Bikes', 'Iberia Wines', 'Jura Watches', 'Kraków Glass', 'Loire Cheese', 'Mosel Motors', 'Nordsee Fish',
             'Olivares Oil', 'Parma Hams', 'Quimper Ceramics', 'Rhein Chemicals', 'Sevilla Leather', 'Torino Coffee',
             'Utrecht Flowers', 'Valencia Toys', 'Weser Steel', 'Zaragoza Tiles', 'Alpine Sports']
customer_countries = ['DE', 'PL', 'ES', 'DE', 'DE', 'IT', 'PL', 'NL', 'ES', 'FR', 'PL', 'FR', 'DE', 'DE',
                      'ES', 'IT', 'FR', 'DE', 'ES', 'IT', 'NL', 'ES', 'DE', 'ES', 'IT']
deleted = {5: '2024-02-11', 12: '2023-11-30', 19: '2024-06-01', 24: '2024-09-15'}
c.executemany('INSERT INTO customers VALUES (?,?,?,?)',
              [(i, name, customer_countries[i - 1], deleted.get(i)) for i, name in enumerate(companies, 1)])
products = [('SKU-100', 'Wine glasses', 'yes'), ('SKU-101', 'Olive oil', 'no'), ('SKU-102', 'Ceramic tiles', 'yes'),
            ('SKU-103', 'Bicycle frame', 'no'), ('SKU-104', 'Coffee beans', 'no'), ('SKU-105', 'Laptop', 'yes'),
            ('SKU-106', 'Steel bolts', 'no'), ('SKU-107', 'Wristwatch', 'yes'), ('SKU-108', 'Cheese wheel', 'no'),
            ('SKU-109', 'Amber necklace', 'yes'), ('SKU-110', 'Paper rolls', 'no'), ('SKU-111', 'Ski boots', 'no')]
c.executemany('INSERT INTO products VALUES (?,?,?)', products)
shipments, items = [], []
# Customers 23-25 never ship; Rotterdam and Hamburg send the most.
for s in range(1, 151):
    customer = random.randint(1, 22)
    origin = random.choices(range(1, 9), [5, 2, 2, 3, 2, 2, 7, 1])[0]
    destination = random.choice([w for w in range(1, 9) if w != origin])
    carrier = random.choices(carriers, [4, 2, 1, 3])[0]
    day = random.randint(0, 700)
    shipped = f'2023-01-01 {random.randint(6, 20):02d}:{random.choice(["00", "30"])}'
    status = random.choices(['DELIVERED', 'IN_TRANSIT', 'LOST'], [0.8, 0.13, 0.07])[0]
    transit = {'ROAD': random.randint(1, 5), 'AIR': random.randint(1, 2), 'SEA': random.randint(6, 20)}[carrier[2]]
    shipped_at = c.execute("SELECT datetime(?, ?)", (shipped, f'+{day} days')).fetchone()[0]
    delivered_at = (c.execute("SELECT datetime(?, ?)", (shipped_at, f'+{transit} days')).fetchone()[0]
                    if status == 'DELIVERED' else None)
    weight = random.randint(300, 40000)
    cost = round(weight / 1000 * {'ROAD': 1.1, 'AIR': 4.5, 'SEA': 0.4}[carrier[2]] + random.uniform(5, 40), 2)
    shipments.append((s, customer, origin, destination, carrier[0], shipped_at, delivered_at, status, weight, cost))
    for line in range(1, random.randint(1, 4) + 1):
        items.append((s, line, random.choice(products)[0], random.randint(1, 60)))
c.executemany('INSERT INTO shipments VALUES (?,?,?,?,?,?,?,?,?,?)', shipments)
c.executemany('INSERT INTO shipment_items VALUES (?,?,?,?)', items)
c.commit()
Q = [
    ("How many shipments went from Hamburg to Lyon?",
     "SELECT COUNT(*) FROM shipments s JOIN warehouses o ON s.origin_id = o.warehouse_id JOIN warehouses d ON s.destination_id = d.warehouse_id WHERE o.city = 'Hamburg' AND d.city = 'Lyon'"),
    ("Which city do the most shipments leave from?",
     "SELECT w.city FROM shipments s JOIN warehouses w ON s.origin_id = w.warehouse_id GROUP BY w.warehouse_id ORDER BY COUNT(*) DESC LIMIT 1"),
    ("Which city receives the most shipments?",
     "SELECT w.city FROM shipments s JOIN warehouses w ON s.destination_id = w.warehouse_id GROUP BY w.warehouse_id ORDER BY COUNT(*) DESC LIMIT 1"),
    ("How many customers are based in Germany?",
     "SELECT COUNT(*) FROM customers c JOIN countries k ON c.country_code = k.code WHERE k.name = 'Germany'"),
    ("What is the total weight, in kilograms, of the shipments carried by air?",
     "SELECT SUM(s.weight_g) / 1000.0 FROM shipments s JOIN carriers c ON s.carrier_id = c.carrier_id WHERE c.mode = 'AIR'"),
    ("How many customers have not been deleted?", "SELECT COUNT(*) FROM customers WHERE deleted_at IS NULL"),
    ("How many shipments are still in transit?", "SELECT COUNT(*) FROM shipments WHERE status = 'IN_TRANSIT'"),
    ("On average, how many days did a delivered shipment take to arrive?",
     "SELECT AVG(julianday(delivered_at) - julianday(shipped_at)) FROM shipments WHERE status = 'DELIVERED'"),
    ("How many item lines does shipment 17 have?", "SELECT COUNT(*) FROM shipment_items WHERE shipment_id = 17"),
    ("What is the total quantity of fragile products shipped?",
     "SELECT SUM(i.quantity) FROM shipment_items i JOIN products p ON i.sku = p.sku WHERE p.fragile = 'yes'"),
    ("Which carrier lost the most shipments?",
     "SELECT c.name FROM carriers c JOIN shipments s ON s.carrier_id = c.carrier_id WHERE s.status = 'LOST' GROUP BY c.carrier_id ORDER BY COUNT(*) DESC LIMIT 1"),
    ("Which customers never sent a shipment? Give their company names.",
     "SELECT company FROM customers WHERE customer_id NOT IN (SELECT customer_id FROM shipments)"),
    ("Which company sent the most expensive shipment?",
     "SELECT c.company FROM customers c JOIN shipments s ON s.customer_id = c.customer_id ORDER BY s.cost_eur DESC LIMIT 1"),
    ("How many shipments stayed within one country?",
     "SELECT COUNT(*) FROM shipments s JOIN warehouses o ON s.origin_id = o.warehouse_id JOIN warehouses d ON s.destination_id = d.warehouse_id WHERE o.country_code = d.country_code"),
    ("List the cities of the warehouses in France.",
     "SELECT w.city FROM warehouses w JOIN countries k ON w.country_code = k.code WHERE k.name = 'France'"),
    ("What was the total shipping cost of the shipments sent in March 2024?",
     "SELECT SUM(cost_eur) FROM shipments WHERE shipped_at LIKE '2024-03%'"),
    ("Which product appears in the most shipments? Give its description.",
     "SELECT p.description FROM products p JOIN shipment_items i ON i.sku = p.sku GROUP BY p.sku ORDER BY COUNT(DISTINCT i.shipment_id) DESC LIMIT 1"),
    ("What percentage of the shipments sent by sea were delivered?",
     "SELECT 100.0 * SUM(s.status = 'DELIVERED') / COUNT(*) FROM shipments s JOIN carriers c ON s.carrier_id = c.carrier_id WHERE c.mode = 'SEA'"),
    ("Which warehouse has the largest capacity? Give its city.",
     "SELECT city FROM warehouses ORDER BY capacity_pallets DESC LIMIT 1"),
    ("How many shipments weighed more than 5 kilograms?", "SELECT COUNT(*) FROM shipments WHERE weight_g > 5000"),
    ("Which customer from Spain spent the most on shipping? Give the company name.",
     "SELECT c.company FROM customers c JOIN shipments s ON s.customer_id = c.customer_id JOIN countries k ON c.country_code = k.code WHERE k.name = 'Spain' GROUP BY c.customer_id ORDER BY SUM(s.cost_eur) DESC LIMIT 1"),
    ("How many shipments left a warehouse in Germany for a warehouse in another country?",
     "SELECT COUNT(*) FROM shipments s JOIN warehouses o ON s.origin_id = o.warehouse_id JOIN warehouses d ON s.destination_id = d.warehouse_id WHERE o.country_code = 'DE' AND d.country_code != 'DE'"),
    ("How many shipments did Nordic Freight carry in 2023?",
     "SELECT COUNT(*) FROM shipments s JOIN carriers c ON s.carrier_id = c.carrier_id WHERE c.name = 'Nordic Freight' AND s.shipped_at LIKE '2023%'"),
    ("What is the average weight, in kilograms, of a shipment to Madrid?",
     "SELECT AVG(s.weight_g) / 1000.0 FROM shipments s JOIN warehouses w ON s.destination_id = w.warehouse_id WHERE w.city = 'Madrid'"),
]
write_questions(out, [(db, q, s) for q, s in Q])
