#!/usr/bin/env python3
"""Two databases that keep their dates as eight-digit numbers (20230315
for 15 March 2023), and 16 questions over them with gold queries, in
Spider's layout: how data warehouses key their dates and many exports
write them, which no benchmark database has.

- sales_ledger: `stores` (6 rows), `sales` (1,500 rows, `sale_date` an
  INTEGER such as 20230315, `amount`), 2021-2024.
- parcel_desk: `parcels` (800 rows, `sent_on` and `delivered_on` TEXT
  such as '20230315', the second NULL for parcels not yet delivered),
  2022-2024.

Values are drawn with fixed seeds, so the files are the same on every run.

Usage: scripts/number_dates.py OUT_DIR

OUT_DIR gets `dev.json` and `database/<db>/<db>.sqlite`; run it with
`iesr bench --dataset spider --data-dir OUT_DIR`.
"""
import datetime
import random

from made_database import database, out_dir, write_questions

CITIES = ["Aarhus", "Bergen", "Cork", "Dijon", "Essen", "Faro"]
CARRIERS = ["Swift", "Northline", "Parcelo"]


def day(text):
    """'20230315' read as a date."""
    return f"date(substr({text}, 1, 4) || '-' || substr({text}, 5, 2) || '-' || substr({text}, 7, 2))"


QUESTIONS = [
    ("sales_ledger", "How many sales were made in 2022?",
     "SELECT COUNT(*) FROM sales WHERE sale_date / 10000 = 2022"),
    ("sales_ledger", "What is the total amount of the sales made in March 2023?",
     "SELECT SUM(amount) FROM sales WHERE sale_date BETWEEN 20230301 AND 20230331"),
    ("sales_ledger", "How many sales did the store in Cork make in 2021?",
     "SELECT COUNT(*) FROM sales AS T1 JOIN stores AS T2 ON T1.store_id = T2.store_id "
     "WHERE T2.city = 'Cork' AND T1.sale_date / 10000 = 2021"),
    ("sales_ledger", "Which city's store had the highest total sales in 2024?",
     "SELECT T2.city FROM sales AS T1 JOIN stores AS T2 ON T1.store_id = T2.store_id "
     "WHERE T1.sale_date / 10000 = 2024 GROUP BY T2.city ORDER BY SUM(T1.amount) DESC LIMIT 1"),
    ("sales_ledger", "How many sales were made on a Saturday?",
     f"SELECT COUNT(*) FROM sales WHERE strftime('%w', {day('sale_date')}) = '6'"),
    ("sales_ledger", "What is the average sale amount in the first half of 2023?",
     "SELECT AVG(amount) FROM sales WHERE sale_date BETWEEN 20230101 AND 20230630"),
    ("sales_ledger", "How many sales were made after 15 October 2024?",
     "SELECT COUNT(*) FROM sales WHERE sale_date > 20241015"),
    ("sales_ledger", "How many sales were made from 25 December 2023 to the end of that year?",
     "SELECT COUNT(*) FROM sales WHERE sale_date BETWEEN 20231225 AND 20231231"),
    ("parcel_desk", "How many parcels were sent in 2023?",
     "SELECT COUNT(*) FROM parcels WHERE substr(sent_on, 1, 4) = '2023'"),
    ("parcel_desk", "How many parcels sent in July 2022 have been delivered?",
     "SELECT COUNT(*) FROM parcels WHERE sent_on LIKE '202207%' AND delivered_on IS NOT NULL"),
    ("parcel_desk", "What is the average number of days between sending and delivery?",
     f"SELECT AVG(julianday({day('delivered_on')}) - julianday({day('sent_on')})) FROM parcels "
     "WHERE delivered_on IS NOT NULL"),
    ("parcel_desk", "How many parcels took more than 5 days to be delivered?",
     f"SELECT COUNT(*) FROM parcels WHERE julianday({day('delivered_on')}) - julianday({day('sent_on')}) > 5"),
    ("parcel_desk", "Which carrier sent the most parcels in 2024?",
     "SELECT carrier FROM parcels WHERE substr(sent_on, 1, 4) = '2024' "
     "GROUP BY carrier ORDER BY COUNT(*) DESC LIMIT 1"),
    ("parcel_desk", "What is the total weight in kilograms of the parcels Northline sent in 2022?",
     "SELECT SUM(weight_kg) FROM parcels WHERE carrier = 'Northline' AND substr(sent_on, 1, 4) = '2022'"),
    ("parcel_desk", "How many parcels were sent in December of any year?",
     "SELECT COUNT(*) FROM parcels WHERE substr(sent_on, 5, 2) = '12'"),
    ("parcel_desk", "How many parcels were delivered before 1 March 2023?",
     "SELECT COUNT(*) FROM parcels WHERE delivered_on < '20230301'"),
]


def random_day(rng, first_year, last_year):
    start = datetime.date(first_year, 1, 1)
    span = (datetime.date(last_year, 12, 31) - start).days
    return start + datetime.timedelta(days=rng.randrange(span + 1))


def sales_ledger(out):
    rng = random.Random(11)
    c = database(out, "sales_ledger")
    c.executescript("""
    CREATE TABLE stores (store_id INTEGER PRIMARY KEY, city TEXT, opened_year INTEGER);
    CREATE TABLE sales (sale_id INTEGER PRIMARY KEY, store_id INTEGER REFERENCES stores(store_id),
                        sale_date INTEGER, amount REAL);
    """)
    c.executemany("INSERT INTO stores VALUES (?, ?, ?)",
                  [(i + 1, city, 2005 + 3 * i) for i, city in enumerate(CITIES)])
    rows = []
    for sale_id in range(1, 1501):
        when = random_day(rng, 2021, 2024)
        rows.append((sale_id, rng.randint(1, len(CITIES)), int(when.strftime("%Y%m%d")),
                     round(rng.uniform(5, 400), 2)))
    c.executemany("INSERT INTO sales VALUES (?, ?, ?, ?)", rows)
    c.commit()


def parcel_desk(out):
    rng = random.Random(12)
    c = database(out, "parcel_desk")
    c.executescript("""
    CREATE TABLE parcels (parcel_id INTEGER PRIMARY KEY, carrier TEXT, weight_kg REAL,
                          sent_on TEXT, delivered_on TEXT);
    """)
    rows = []
    for parcel_id in range(1, 801):
        sent = random_day(rng, 2022, 2024)
        delivered = sent + datetime.timedelta(days=rng.randint(1, 9))
        delivered_on = None if rng.random() < 0.1 else delivered.strftime("%Y%m%d")
        rows.append((parcel_id, rng.choice(CARRIERS), round(rng.uniform(0.2, 30), 1),
                     sent.strftime("%Y%m%d"), delivered_on))
    c.executemany("INSERT INTO parcels VALUES (?, ?, ?, ?, ?)", rows)
    c.commit()


out = out_dir(__doc__)
sales_ledger(out)
parcel_desk(out)
write_questions(out, QUESTIONS)
