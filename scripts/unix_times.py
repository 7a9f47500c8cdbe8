#!/usr/bin/env python3
"""Two databases that keep their times as Unix times, and 16 questions
over them with gold queries, in Spider's layout: what many applications'
databases look like (an integer of seconds, or milliseconds, since
1970-01-01 UTC), which no benchmark database has.

- shop_events: `users` (200 rows, `created_at` in seconds) and `orders`
  (2,000 rows, `placed_at` in seconds), 2019-2023.
- sensor_log: `sensors` (4 rows) and `readings` (3,000 rows, `ts` in
  milliseconds), 2020-2023.

Values are drawn with fixed seeds, so the files are the same on every run.

Usage: scripts/unix_times.py OUT_DIR

OUT_DIR gets `dev.json` and `database/<db>/<db>.sqlite`; run it with
`iesr bench --dataset spider --data-dir OUT_DIR`.
"""
import random

from made_database import database, out_dir, write_questions

START_2019 = 1546300800  # 2019-01-01 00:00:00 UTC
START_2020 = 1577836800
START_2024 = 1704067200
COUNTRIES = ["Chile", "Ghana", "Latvia", "Nepal", "Peru", "Spain"]
SENSORS = [("A", "roof"), ("B", "cellar"), ("C", "garden"), ("D", "garage")]

YEAR = "strftime('%Y', {}, 'unixepoch')"
MONTH = "strftime('%Y-%m', {}, 'unixepoch')"
QUESTIONS = [
    ("shop_events", "How many orders were placed in 2021?",
     f"SELECT COUNT(*) FROM orders WHERE {YEAR.format('placed_at')} = '2021'"),
    ("shop_events", "How many users signed up before 2020?",
     f"SELECT COUNT(*) FROM users WHERE {YEAR.format('created_at')} < '2020'"),
    ("shop_events", "How many orders were placed in March 2022?",
     f"SELECT COUNT(*) FROM orders WHERE {MONTH.format('placed_at')} = '2022-03'"),
    ("shop_events", "What is the total amount of the orders placed in December 2021?",
     f"SELECT SUM(amount) FROM orders WHERE {MONTH.format('placed_at')} = '2021-12'"),
    ("shop_events", "How many orders were placed on a Sunday?",
     "SELECT COUNT(*) FROM orders WHERE strftime('%w', placed_at, 'unixepoch') = '0'"),
    ("shop_events", "What is the name of the user who placed the earliest order?",
     "SELECT T1.name FROM users AS T1 JOIN orders AS T2 ON T1.user_id = T2.user_id "
     "ORDER BY T2.placed_at ASC LIMIT 1"),
    ("shop_events", "How many users from Chile signed up in 2023?",
     f"SELECT COUNT(*) FROM users WHERE country = 'Chile' AND {YEAR.format('created_at')} = '2023'"),
    ("shop_events", "What is the average order amount in 2022?",
     f"SELECT AVG(amount) FROM orders WHERE {YEAR.format('placed_at')} = '2022'"),
    ("sensor_log", "How many readings were taken in 2021?",
     f"SELECT COUNT(*) FROM readings WHERE {YEAR.format('ts / 1000')} = '2021'"),
    ("sensor_log", "What is the highest value read by sensor A in June 2022?",
     f"SELECT MAX(value) FROM readings WHERE sensor_code = 'A' AND {MONTH.format('ts / 1000')} = '2022-06'"),
    ("sensor_log", "How many readings did sensor B take in 2023?",
     f"SELECT COUNT(*) FROM readings WHERE sensor_code = 'B' AND {YEAR.format('ts / 1000')} = '2023'"),
    ("sensor_log", "Which sensor code has the most readings in 2022?",
     f"SELECT sensor_code FROM readings WHERE {YEAR.format('ts / 1000')} = '2022' "
     "GROUP BY sensor_code ORDER BY COUNT(*) DESC LIMIT 1"),
    ("sensor_log", "What is the average value of the readings taken in January 2021?",
     f"SELECT AVG(value) FROM readings WHERE {MONTH.format('ts / 1000')} = '2021-01'"),
    ("sensor_log", "How many readings were taken between 8 and 9 o'clock in the morning (UTC)?",
     "SELECT COUNT(*) FROM readings WHERE strftime('%H', ts / 1000, 'unixepoch') = '08'"),
    ("sensor_log", "Where is the sensor that took the latest reading?",
     "SELECT T1.location FROM sensors AS T1 JOIN readings AS T2 ON T1.code = T2.sensor_code "
     "ORDER BY T2.ts DESC LIMIT 1"),
    ("sensor_log", "How many readings were taken in the garden in 2020?",
     "SELECT COUNT(*) FROM readings AS T1 JOIN sensors AS T2 ON T1.sensor_code = T2.code "
     f"WHERE T2.location = 'garden' AND {YEAR.format('T1.ts / 1000')} = '2020'"),
]


def shop_events(out):
    rng = random.Random(3)
    conn = database(out, "shop_events")
    conn.execute("CREATE TABLE users (user_id INTEGER PRIMARY KEY, name TEXT, "
                 "country TEXT, created_at INTEGER)")
    conn.execute("CREATE TABLE orders (order_id INTEGER PRIMARY KEY, "
                 "user_id INTEGER REFERENCES users(user_id), amount REAL, placed_at INTEGER)")
    for user in range(1, 201):
        conn.execute("INSERT INTO users VALUES (?, ?, ?, ?)",
                     (user, f"User {user}", rng.choice(COUNTRIES),
                      rng.randrange(START_2019, START_2024)))
    for order in range(1, 2001):
        conn.execute("INSERT INTO orders VALUES (?, ?, ?, ?)",
                     (order, rng.randrange(1, 201), round(rng.uniform(5, 500), 2),
                      rng.randrange(START_2019, START_2024)))
    conn.commit()


def sensor_log(out):
    rng = random.Random(5)
    conn = database(out, "sensor_log")
    conn.execute("CREATE TABLE sensors (code TEXT PRIMARY KEY, location TEXT)")
    conn.executemany("INSERT INTO sensors VALUES (?, ?)", SENSORS)
    conn.execute("CREATE TABLE readings (reading_id INTEGER PRIMARY KEY, "
                 "sensor_code TEXT REFERENCES sensors(code), value REAL, ts INTEGER)")
    for reading in range(1, 3001):
        conn.execute("INSERT INTO readings VALUES (?, ?, ?, ?)",
                     (reading, rng.choice(SENSORS)[0], round(rng.uniform(-10, 40), 1),
                      rng.randrange(START_2020 * 1000, START_2024 * 1000)))
    conn.commit()


def main():
    out = out_dir(__doc__)
    shop_events(out)
    sensor_log(out)
    write_questions(out, QUESTIONS)


if __name__ == "__main__":
    main()
