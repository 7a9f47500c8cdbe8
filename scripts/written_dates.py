#!/usr/bin/env python3
"""Two databases that store dates as text the way people write them, and
12 questions over them with gold queries, in Spider's layout: what a
spreadsheet exported to SQLite often looks like, which no benchmark
database has (theirs write `YYYY-MM-DD`).

- orders_us: `orders` (600 rows, `order_date` as `MM/DD/YYYY`), 2019-2023.
- bookings_eu: `bookings` (400 rows, `check_in` as `DD.MM.YYYY`), 2020-2023.

The latest and the earliest date of each table are held by one row
alone, so "who was last" has one answer. Values are drawn with fixed
seeds, so the files are the same on every run.

Usage: scripts/written_dates.py OUT_DIR

OUT_DIR gets `dev.json` and `database/<db>/<db>.sqlite`; run it with
`iesr bench --dataset spider --data-dir OUT_DIR`.
"""
import datetime
import random

from made_database import database, out_dir, write_questions

US = "substr(order_date, 7, 4)"
US_MONTH = "substr(order_date, 1, 2)"
US_ISO = "substr(order_date, 7, 4) || substr(order_date, 1, 2) || substr(order_date, 4, 2)"
EU = "substr(check_in, 7, 4)"
EU_MONTH = "substr(check_in, 4, 2)"
EU_ISO = "substr(check_in, 7, 4) || substr(check_in, 4, 2) || substr(check_in, 1, 2)"
QUESTIONS = [
    ("orders_us", "How many orders were placed in 2021?",
     f"SELECT COUNT(*) FROM orders WHERE {US} = '2021'"),
    ("orders_us", "What is the total amount of the orders placed in 2022?",
     f"SELECT SUM(amount) FROM orders WHERE {US} = '2022'"),
    ("orders_us", "Which customer placed the most recent order?",
     f"SELECT customer FROM orders ORDER BY {US_ISO} DESC LIMIT 1"),
    ("orders_us", "How many orders were placed in March 2020?",
     f"SELECT COUNT(*) FROM orders WHERE {US} = '2020' AND {US_MONTH} = '03'"),
    ("orders_us", "Which customer placed the earliest order?",
     f"SELECT customer FROM orders ORDER BY {US_ISO} ASC LIMIT 1"),
    ("orders_us", "How many orders were placed after June 30, 2023?",
     f"SELECT COUNT(*) FROM orders WHERE {US_ISO} > '20230630'"),
    ("bookings_eu", "How many bookings checked in in 2023?",
     f"SELECT COUNT(*) FROM bookings WHERE {EU} = '2023'"),
    ("bookings_eu", "What is the average number of nights of the bookings that checked in in 2021?",
     f"SELECT AVG(nights) FROM bookings WHERE {EU} = '2021'"),
    ("bookings_eu", "Which guest checked in last?",
     f"SELECT guest FROM bookings ORDER BY {EU_ISO} DESC LIMIT 1"),
    ("bookings_eu", "How many bookings checked in in December 2022?",
     f"SELECT COUNT(*) FROM bookings WHERE {EU} = '2022' AND {EU_MONTH} = '12'"),
    ("bookings_eu", "How many nights were booked in all by the bookings that checked in in August 2021?",
     f"SELECT SUM(nights) FROM bookings WHERE {EU} = '2021' AND {EU_MONTH} = '08'"),
    ("bookings_eu", "Which guest checked in first?",
     f"SELECT guest FROM bookings ORDER BY {EU_ISO} ASC LIMIT 1"),
]


def dates(rng, first, last, count):
    """`count` dates strictly between `first` and `last`, then those two."""
    span = (last - first).days
    inner = [first + datetime.timedelta(days=rng.randrange(1, span)) for _ in range(count - 2)]
    return inner + [first, last]


def orders_us(out):
    rng = random.Random(11)
    conn = database(out, "orders_us")
    conn.execute("CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer TEXT, "
                 "amount REAL, order_date TEXT)")
    days = dates(rng, datetime.date(2019, 1, 2), datetime.date(2023, 12, 30), 600)
    rng.shuffle(days)
    for order, day in enumerate(days, 1):
        conn.execute("INSERT INTO orders VALUES (?, ?, ?, ?)",
                     (order, f"Customer {rng.randrange(1, 80)}", round(rng.uniform(5, 300), 2),
                      day.strftime("%m/%d/%Y")))
    conn.commit()


def bookings_eu(out):
    rng = random.Random(13)
    conn = database(out, "bookings_eu")
    conn.execute("CREATE TABLE bookings (booking_id INTEGER PRIMARY KEY, guest TEXT, "
                 "nights INTEGER, check_in TEXT)")
    days = dates(rng, datetime.date(2020, 1, 3), datetime.date(2023, 12, 28), 400)
    rng.shuffle(days)
    for booking, day in enumerate(days, 1):
        conn.execute("INSERT INTO bookings VALUES (?, ?, ?, ?)",
                     (booking, f"Guest {rng.randrange(1, 120)}", rng.randrange(1, 15),
                      day.strftime("%d.%m.%Y")))
    conn.commit()


def main():
    out = out_dir(__doc__)
    orders_us(out)
    bookings_eu(out)
    write_questions(out, QUESTIONS)


if __name__ == "__main__":
    main()
