#!/usr/bin/env python3
"""Two databases that store their numbers as text, and 16 questions over
them with gold queries, in Spider's layout: what a CSV file loaded with
`sqlite3`'s `.import` looks like (every column TEXT), or a table created
without column types, which no benchmark database is.

SQLite compares and sorts such numbers as text: '9.5' > '100', so
`price > 100`, `ORDER BY price DESC` and `MAX(price)` answer wrongly
while `SUM` and `AVG` still read the numbers.

- shop_import: `products` (300 rows) and `sales` (1,500 rows), every
  column declared TEXT.
- city_stats: `cities` (120 rows), its columns declared without a type.

The extremes of every ordered column are held by one row alone, so
"which is largest" has one answer, and each differs from the extreme of
the same column read as text. Values are drawn with fixed seeds, so
the files are the same on every run.

Usage: scripts/text_numbers.py OUT_DIR

OUT_DIR gets `dev.json` and `database/<db>/<db>.sqlite`; run it with
`iesr bench --dataset spider --data-dir OUT_DIR`.
"""
import random

from made_database import database, out_dir, write_questions

CATEGORIES = ["garden", "kitchen", "office", "toys"]
COUNTRIES = ["Brazil", "India", "Italy", "Kenya", "Mexico", "Poland"]


def real(column):
    return f"CAST({column} AS REAL)"


QUESTIONS = [
    ("shop_import", "Which product is the most expensive?",
     f"SELECT name FROM products ORDER BY {real('price')} DESC LIMIT 1"),
    ("shop_import", "How many products cost more than 100?",
     f"SELECT COUNT(*) FROM products WHERE {real('price')} > 100"),
    ("shop_import", "What is the highest price of a kitchen product?",
     f"SELECT MAX({real('price')}) FROM products WHERE category = 'kitchen'"),
    ("shop_import", "What is the name of the cheapest toy?",
     f"SELECT name FROM products WHERE category = 'toys' ORDER BY {real('price')} ASC LIMIT 1"),
    ("shop_import", "How many products have fewer than 20 items in stock?",
     f"SELECT COUNT(*) FROM products WHERE {real('stock')} < 20"),
    ("shop_import", "List the names of the three products with the most items in stock.",
     f"SELECT name FROM products ORDER BY {real('stock')} DESC LIMIT 3"),
    ("shop_import", "What is the total quantity sold of products in the office category?",
     "SELECT SUM(T2.quantity) FROM products AS T1 JOIN sales AS T2 "
     "ON T1.product_id = T2.product_id WHERE T1.category = 'office'"),
    ("shop_import", "Which product was sold in the largest quantity in a single sale?",
     "SELECT T1.name FROM products AS T1 JOIN sales AS T2 ON T1.product_id = T2.product_id "
     f"ORDER BY {real('T2.quantity')} DESC LIMIT 1"),
    ("shop_import", "How many sales sold more than 8 items?",
     f"SELECT COUNT(*) FROM sales WHERE {real('quantity')} > 8"),
    ("shop_import", "What is the average price of garden products?",
     "SELECT AVG(price) FROM products WHERE category = 'garden'"),
    ("city_stats", "Which city has the largest population?",
     f"SELECT name FROM cities ORDER BY {real('population')} DESC LIMIT 1"),
    ("city_stats", "How many cities have more than one million inhabitants?",
     f"SELECT COUNT(*) FROM cities WHERE {real('population')} > 1000000"),
    ("city_stats", "Which city has the smallest area?",
     f"SELECT name FROM cities ORDER BY {real('area_km2')} ASC LIMIT 1"),
    ("city_stats", "How many cities were founded before the year 1500?",
     f"SELECT COUNT(*) FROM cities WHERE {real('founded')} < 1500"),
    ("city_stats", "Which city in India has the smallest population?",
     f"SELECT name FROM cities WHERE country = 'India' ORDER BY {real('population')} ASC LIMIT 1"),
    ("city_stats", "What is the total population of the cities in Kenya?",
     "SELECT SUM(population) FROM cities WHERE country = 'Kenya'"),
]


def distinct_numbers(rng, count, draw):
    """`count` different numbers from `draw`, so every extreme is unique."""
    seen = []
    while len(seen) < count:
        value = draw(rng)
        if value not in seen:
            seen.append(value)
    return seen


def shop_import(out):
    rng = random.Random(7)
    conn = database(out, "shop_import")
    conn.execute("CREATE TABLE products (product_id TEXT, name TEXT, category TEXT, "
                 "price TEXT, stock TEXT)")
    conn.execute("CREATE TABLE sales (sale_id TEXT, product_id TEXT, quantity TEXT, "
                 "sold_on TEXT)")
    prices = distinct_numbers(rng, 300, lambda r: round(r.choice([1, 10, 100, 1000])
                                                        * r.uniform(2, 9.9), 2))
    prices[rng.randrange(300)] = 12480.5
    stocks = distinct_numbers(rng, 300, lambda r: r.randrange(0, 1000))
    for product, stock in zip(rng.sample(range(300), 3), [1200, 1500, 2400]):
        stocks[product] = stock
    categories = [rng.choice(CATEGORIES) for _ in range(300)]
    # A toy at 15.75 sorts as text before every toy at 2 to 9.99.
    toys = [i for i, c in enumerate(categories) if c == "toys" and prices[i] < 10_000]
    prices[rng.choice(toys)] = 15.75
    for product in range(1, 301):
        conn.execute("INSERT INTO products VALUES (?, ?, ?, ?, ?)",
                     (str(product), f"Item {product}", categories[product - 1],
                      str(prices[product - 1]), str(stocks[product - 1])))
    largest_sale = rng.randrange(1, 1501)
    for sale in range(1, 1501):
        quantity = 25 if sale == largest_sale else rng.randrange(1, 13)
        conn.execute("INSERT INTO sales VALUES (?, ?, ?, ?)",
                     (str(sale), str(rng.randrange(1, 301)), str(quantity),
                      f"2023-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"))
    conn.commit()


def city_stats(out):
    rng = random.Random(11)
    conn = database(out, "city_stats")
    conn.execute("CREATE TABLE cities (name, country, population, area_km2, founded)")
    populations = distinct_numbers(rng, 120, lambda r: r.randrange(8_000, 9_000_000))
    populations[rng.randrange(120)] = 12_345_678
    areas = distinct_numbers(rng, 120, lambda r: round(r.uniform(4, 2_000), 1))
    years = distinct_numbers(rng, 120, lambda r: r.randrange(600, 1990))
    for city in range(120):
        conn.execute("INSERT INTO cities VALUES (?, ?, ?, ?, ?)",
                     (f"City {city + 1}", rng.choice(COUNTRIES), str(populations[city]),
                      str(areas[city]), str(years[city])))
    conn.commit()


def main():
    out = out_dir(__doc__)
    shop_import(out)
    city_stats(out)
    write_questions(out, QUESTIONS)


if __name__ == "__main__":
    main()
