#!/usr/bin/env python3
"""Two databases with one very wide table each, and 16 questions over them
with gold queries, in Spider's layout: what a user's spreadsheet export
looks like (a figure per metric and year), which no benchmark database
has (their widest table has 26 columns).

- store_stats: `store_stats` (region, store_id, city, and 10 metrics for
  each year 2000-2024: 253 columns, 500 rows) and `managers` (500 rows,
  one per store).
- indicators: `country_indicators` (code, name, continent, income group,
  and 40 indicators for each of 2018-2020: 124 columns, 12 rows).

Values are drawn with fixed seeds, so the files are the same on every run.

Usage: scripts/wide_tables.py OUT_DIR

OUT_DIR gets `dev.json` and `database/<db>/<db>.sqlite`; run it with
`iesr bench --dataset spider --data-dir OUT_DIR`.
"""
import random

from made_database import database, out_dir, write_questions

STORE_METRICS = ["revenue", "cost", "profit", "units", "returns",
                 "visits", "clicks", "signups", "refunds", "tickets"]
CITIES = ["Lyon", "Oslo", "Porto", "Kyoto", "Austin", "Perth", "Quito", "Tunis"]
INDICATORS = [
    "gdp_usd", "gdp_per_capita_usd", "population", "urban_population_share",
    "life_expectancy_years", "infant_mortality_per_1000", "literacy_rate",
    "unemployment_rate", "inflation_rate", "exports_usd", "imports_usd",
    "co2_emissions_tonnes", "forest_area_share", "internet_users_share",
    "mobile_subscriptions_per_100", "electricity_access_share",
    "renewable_energy_share", "health_spending_share_gdp",
    "education_spending_share_gdp", "military_spending_share_gdp",
    "tourist_arrivals", "hospital_beds_per_1000", "physicians_per_1000",
    "fertility_rate", "median_age", "gini_index", "poverty_rate",
    "road_density_km_per_100_sq_km", "rail_lines_km", "air_passengers",
    "arable_land_share", "water_access_share", "sanitation_access_share",
    "tax_revenue_share_gdp", "public_debt_share_gdp",
    "foreign_direct_investment_usd", "research_spending_share_gdp",
    "patent_applications", "high_tech_exports_share", "female_labor_share",
]
COUNTRIES = [
    ("FRA", "France", "Europe", "High"), ("KEN", "Kenya", "Africa", "Lower middle"),
    ("PER", "Peru", "South America", "Upper middle"), ("VNM", "Vietnam", "Asia", "Lower middle"),
    ("NOR", "Norway", "Europe", "High"), ("NGA", "Nigeria", "Africa", "Lower middle"),
    ("CAN", "Canada", "North America", "High"), ("IND", "India", "Asia", "Lower middle"),
    ("BRA", "Brazil", "South America", "Upper middle"), ("NZL", "New Zealand", "Oceania", "High"),
    ("EGY", "Egypt", "Africa", "Lower middle"), ("JPN", "Japan", "Asia", "High"),
]
QUESTIONS = [
    ("store_stats", "Which city had the highest revenue in 2019?",
     "SELECT city FROM store_stats ORDER BY revenue_2019 DESC LIMIT 1"),
    ("store_stats", "What is the average profit in 2010 of the store managed by Manager 7?",
     "SELECT AVG(T1.profit_2010) FROM store_stats AS T1 JOIN managers AS T2 "
     "ON T1.store_id = T2.store_id WHERE T2.name = 'Manager 7'"),
    ("store_stats", "How many stores in the North region had more clicks than visits in 2015?",
     "SELECT COUNT(*) FROM store_stats WHERE region = 'North' AND clicks_2015 > visits_2015"),
    ("store_stats", "What is the total number of units sold in 2023 by stores in Kyoto?",
     "SELECT SUM(units_2023) FROM store_stats WHERE city = 'Kyoto'"),
    ("store_stats", "List the ids of the stores whose refunds in 2005 exceeded 990.",
     "SELECT store_id FROM store_stats WHERE refunds_2005 > 990"),
    ("store_stats", "Which manager runs the store with the lowest cost in 2021?",
     "SELECT T2.name FROM store_stats AS T1 JOIN managers AS T2 "
     "ON T1.store_id = T2.store_id ORDER BY T1.cost_2021 ASC LIMIT 1"),
    ("store_stats", "For each region, what is the maximum number of signups in 2012?",
     "SELECT region, MAX(signups_2012) FROM store_stats GROUP BY region"),
    ("store_stats", "How many stores are in Porto?",
     "SELECT COUNT(*) FROM store_stats WHERE city = 'Porto'"),
    ("indicators", "Which country had the highest life expectancy in 2020?",
     "SELECT country_name FROM country_indicators ORDER BY life_expectancy_years_2020 DESC LIMIT 1"),
    ("indicators", "What was the literacy rate of Kenya in 2019?",
     "SELECT literacy_rate_2019 FROM country_indicators WHERE country_name = 'Kenya'"),
    ("indicators", "What is the average unemployment rate in 2018 of the countries in Africa?",
     "SELECT AVG(unemployment_rate_2018) FROM country_indicators WHERE continent = 'Africa'"),
    ("indicators", "List the names of high income countries whose renewable energy share in 2020 is above 50.",
     "SELECT country_name FROM country_indicators "
     "WHERE income_group = 'High' AND renewable_energy_share_2020 > 50"),
    ("indicators", "How many countries had a higher fertility rate in 2020 than in 2018?",
     "SELECT COUNT(*) FROM country_indicators WHERE fertility_rate_2020 > fertility_rate_2018"),
    # Two continents tie at the top, so the question asks for every one.
    ("indicators", "Which continents have the most countries in the table?",
     "SELECT continent FROM country_indicators GROUP BY continent HAVING COUNT(*) = "
     "(SELECT COUNT(*) FROM country_indicators GROUP BY continent ORDER BY COUNT(*) DESC LIMIT 1)"),
    ("indicators", "What are the CO2 emissions in 2019 of Japan?",
     "SELECT co2_emissions_tonnes_2019 FROM country_indicators WHERE country_name = 'Japan'"),
    ("indicators", "Give the country code of the country with the lowest gini index in 2018.",
     "SELECT country_code FROM country_indicators ORDER BY gini_index_2018 ASC LIMIT 1"),
]


def insert(conn, table, row):
    conn.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)


def store_stats(out):
    rng = random.Random(1)
    figures = [f"{m}_{year}" for year in range(2000, 2025) for m in STORE_METRICS]
    conn = database(out, "store_stats")
    columns = ["region TEXT", "store_id INTEGER PRIMARY KEY", "city TEXT"]
    columns += [f"{f} REAL" for f in figures]
    conn.execute(f"CREATE TABLE store_stats ({', '.join(columns)})")
    for store in range(1, 501):
        row = [rng.choice(["North", "South", "East", "West"]), store, rng.choice(CITIES)]
        insert(conn, "store_stats", row + [round(rng.random() * 1000, 2) for _ in figures])
    conn.execute("CREATE TABLE managers (manager_id INTEGER PRIMARY KEY, name TEXT, "
                 "store_id INTEGER REFERENCES store_stats(store_id))")
    for store in range(1, 501):
        insert(conn, "managers", (store, f"Manager {store}", store))
    conn.commit()


def indicators(out):
    rng = random.Random(7)
    figures = [f"{i}_{year}" for year in (2018, 2019, 2020) for i in INDICATORS]
    conn = database(out, "indicators")
    columns = ["country_code TEXT PRIMARY KEY", "country_name TEXT", "continent TEXT",
               "income_group TEXT"] + [f"{f} REAL" for f in figures]
    conn.execute(f"CREATE TABLE country_indicators ({', '.join(columns)})")
    for country in COUNTRIES:
        insert(conn, "country_indicators",
               list(country) + [round(rng.random() * 100, 2) for _ in figures])
    conn.commit()


def main():
    out = out_dir(__doc__)
    store_stats(out)
    indicators(out)
    write_questions(out, QUESTIONS)


if __name__ == "__main__":
    main()
